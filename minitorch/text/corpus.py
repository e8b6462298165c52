"""A seeded generator of a small but real English→Spanish translation corpus.

This file holds a lexicon, a grammar and the functions :func:`generate_pairs` and
:func:`load_corpus`, and :func:`generate_sentences` (the same pairs with the grammar slots each
was drawn from, to label them by tense, form, person...). It imports only the standard library.

The grammar
-----------
Every sentence is ``subject + verb phrase + object (+ time adverb)``, in one of four *tenses* and
three *forms*::

    tense        statement                     negation                         question
    present      he eats the bread             he does not eat the bread        does he eat the bread?
    progressive  we are eating bread           we are not eating bread          are we eating bread?
    past         I bought two red cars         I did not buy two red cars       did you buy a car?
    future       she will read a letter        she will not read a letter       will they read a letter?

and Spanish renders them as (same rows)::

    come el pan   /  no come el pan   /  ¿come el pan?
    estamos comiendo pan  /  no estamos comiendo pan  /  ¿estamos comiendo pan?
    compré dos coches rojos  /  no compré dos coches rojos  /  ¿compraste un coche?
    leerá una carta  /  no leerá una carta  /  ¿leerán una carta?

* **Subjects**: the pronouns I, you (always singular *tú*), he, she, we, they, which Spanish drops
  (the verb ending carries the person), and noun phrases ("the boy" → *el niño*, "my sisters" →
  *mis hermanas*), which Spanish keeps, also in questions (*¿el niño come pan?*).
* **Verbs**: regular -ar/-er/-ir conjugation (present, preterite, future, gerund for the
  progressive *estar + gerundio*) with irregular forms written out (tener, querer, ver, leer,
  cerrar, encontrar, buscar). Stative verbs (have, want, need, see, find) have no progressive.
* **Objects**: a noun phrase ``determiner + (adjective) + noun`` → ``determiner + noun +
  (adjective)``; the determiner and adjective agree with the noun in gender and number ("the red
  cars" → *los coches rojos*, "a white house" → *una casa blanca*, "our new houses" → *nuestras
  casas nuevas*). English "a" becomes "an" before a vowel. Mass nouns (bread, water, ...) take no
  "a"/number; feminine nouns with a stressed first "a" take *el* (*el agua fría*).
  Each verb accepts only objects that make sense with it (you eat food and drink drinks).
* **Negation**: *no* before the verb ("I do not have a car" → *no tengo un coche*).
* **Questions**: yes/no questions, Spanish wraps the statement in *¿ ... ?*.
* **Time adverbs** (optional, at the end): every day / now / yesterday / tomorrow, each only with
  a tense it fits. "read" has the same past and present form in English, so its past always
  carries "yesterday" to keep every English sentence's translation unique.

Text conventions: lower case (but the pronoun "I"), single spaces, no final period on
statements, "?" attached to the last word and "¿" to the first (ordinary orthography; the BPE
tokenizer splits punctuation off and restores it exactly). Sentences are 3–11 words long in English, 2–10 in Spanish.

English sentences determine their Spanish translation, so pairs are deduplicated by the English
sentence; :func:`load_corpus` splits distinct English sentences, so no held-out source sentence
occurs in training.
"""
from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any, Dict, List, NamedTuple, Optional, Sequence, Tuple

# Spanish persons used: 1st sg (yo), 2nd sg (tú), 3rd sg, 1st pl (nosotros), 3rd pl.
FIRST_SG, SECOND_SG, THIRD_SG, FIRST_PL, THIRD_PL = range(5)
TENSES = ("present", "progressive", "past", "future")
FORMS = ("statement", "negation", "question")

# ---------------------------------------------------------------------------- subjects


@dataclass(frozen=True)
class Subject:
    english: str
    spanish: Optional[str]  # None: a pronoun, dropped in Spanish
    person: int


PRONOUN_SUBJECTS = (
    Subject("I", None, FIRST_SG), Subject("you", None, SECOND_SG), Subject("he", None, THIRD_SG),
    Subject("she", None, THIRD_SG), Subject("we", None, FIRST_PL), Subject("they", None, THIRD_PL),
)

NOUN_SUBJECTS = (
    Subject("the boy", "el niño", THIRD_SG), Subject("the girl", "la niña", THIRD_SG),
    Subject("the man", "el hombre", THIRD_SG), Subject("the woman", "la mujer", THIRD_SG),
    Subject("my sister", "mi hermana", THIRD_SG), Subject("my brother", "mi hermano", THIRD_SG),
    Subject("my father", "mi padre", THIRD_SG), Subject("my mother", "mi madre", THIRD_SG),
    Subject("my friend", "mi amigo", THIRD_SG), Subject("the teacher", "el profesor", THIRD_SG),
    Subject("the children", "los niños", THIRD_PL), Subject("the girls", "las niñas", THIRD_PL),
    Subject("my sisters", "mis hermanas", THIRD_PL), Subject("my parents", "mis padres", THIRD_PL),
    Subject("my friends", "mis amigos", THIRD_PL), Subject("the students", "los estudiantes", THIRD_PL),
    Subject("the women", "las mujeres", THIRD_PL), Subject("the men", "los hombres", THIRD_PL),
)

# ---------------------------------------------------------------------------- nouns


@dataclass(frozen=True)
class Noun:
    english: str
    english_plural: Optional[str]  # None for mass nouns
    spanish: str
    spanish_plural: Optional[str]
    feminine: bool
    kinds: frozenset  # which verbs may take it: see Verb.object_kinds
    stressed_a: bool = False  # "agua": feminine, but "el"/"un" in the singular

    @property
    def mass(self) -> bool:
        return self.english_plural is None


def _noun(en, en_pl, es, es_pl, gender, kinds, stressed_a=False):
    return Noun(en, en_pl, es, es_pl, gender == "f", frozenset(kinds.split()), stressed_a)


NOUNS = (
    # things
    _noun("car", "cars", "coche", "coches", "m", "thing clean wash paint use"),
    _noun("house", "houses", "casa", "casas", "f", "thing clean paint place"),
    _noun("book", "books", "libro", "libros", "m", "thing read write open lose"),
    _noun("letter", "letters", "carta", "cartas", "f", "thing read write open lose"),
    _noun("newspaper", "newspapers", "periódico", "periódicos", "m", "thing read lose"),
    _noun("table", "tables", "mesa", "mesas", "f", "thing clean wash paint break"),
    _noun("chair", "chairs", "silla", "sillas", "f", "thing clean paint break"),
    _noun("door", "doors", "puerta", "puertas", "f", "open clean paint"),
    _noun("window", "windows", "ventana", "ventanas", "f", "open clean break"),
    _noun("shirt", "shirts", "camisa", "camisas", "f", "thing wash lose"),
    _noun("hat", "hats", "sombrero", "sombreros", "m", "thing lose"),
    _noun("bicycle", "bicycles", "bicicleta", "bicicletas", "f", "thing clean wash paint use"),
    _noun("cup", "cups", "taza", "tazas", "f", "thing wash break use"),
    _noun("bottle", "bottles", "botella", "botellas", "f", "thing open break"),
    _noun("key", "keys", "llave", "llaves", "f", "thing lose use"),
    _noun("phone", "phones", "teléfono", "teléfonos", "m", "thing lose use break"),
    _noun("computer", "computers", "ordenador", "ordenadores", "m", "thing use clean"),
    _noun("box", "boxes", "caja", "cajas", "f", "thing open paint"),
    _noun("apartment", "apartments", "piso", "pisos", "m", "thing clean paint place"),
    _noun("city", "cities", "ciudad", "ciudades", "f", "place"),
    _noun("village", "villages", "pueblo", "pueblos", "m", "place"),
    # food
    _noun("apple", "apples", "manzana", "manzanas", "f", "food buy_food"),
    _noun("orange", "oranges", "naranja", "naranjas", "f", "food buy_food"),
    _noun("cake", "cakes", "pastel", "pasteles", "m", "food cook buy_food"),
    _noun("bread", None, "pan", None, "m", "food buy_food warm"),
    _noun("rice", None, "arroz", None, "m", "food cook buy_food warm"),
    _noun("fish", None, "pescado", None, "m", "food cook buy_food warm"),
    _noun("meat", None, "carne", None, "f", "food cook buy_food warm"),
    _noun("soup", None, "sopa", None, "f", "food cook buy_food warm"),
    _noun("cheese", None, "queso", None, "m", "food buy_food"),
    # drinks
    _noun("water", None, "agua", None, "f", "drink buy_food warm", stressed_a=True),
    _noun("milk", None, "leche", None, "f", "drink buy_food warm"),
    _noun("coffee", None, "café", None, "m", "drink cook buy_food warm"),
    _noun("tea", None, "té", None, "m", "drink cook buy_food warm"),
    _noun("wine", None, "vino", None, "m", "drink buy_food"),
    _noun("juice", None, "zumo", None, "m", "drink buy_food"),
)

# ---------------------------------------------------------------------------- adjectives


@dataclass(frozen=True)
class Adjective:
    english: str
    spanish_forms: Tuple[str, str, str, str]  # masc sg, fem sg, masc pl, fem pl
    kinds: frozenset  # nouns of which kinds it may describe

    def agree(self, feminine: bool, plural: bool) -> str:
        return self.spanish_forms[2 * plural + feminine]


def _adjective(english, spanish_masculine, kinds):
    """Spanish forms by the regular rules: -o → -a/-os/-as; -e → -es; consonant → -es."""
    stem = spanish_masculine
    if stem.endswith("o"):
        forms = (stem, stem[:-1] + "a", stem + "s", stem[:-1] + "as")
    elif stem.endswith("e"):
        forms = (stem, stem, stem + "s", stem + "s")
    else:
        forms = (stem, stem, stem + "es", stem + "es")
    return Adjective(english, forms, frozenset(kinds.split()))


# Adjective kinds match noun kinds: colours for objects, "hot"/"cold" for what is served warm.
_COLOURED = "thing open"
_SIZED = "thing open place"
ADJECTIVES = (
    _adjective("red", "rojo", _COLOURED), _adjective("white", "blanco", _COLOURED),
    _adjective("black", "negro", _COLOURED), _adjective("yellow", "amarillo", _COLOURED),
    _adjective("green", "verde", _COLOURED), _adjective("blue", "azul", _COLOURED),
    _adjective("new", "nuevo", _SIZED), _adjective("old", "viejo", _SIZED),
    _adjective("big", "grande", _SIZED), _adjective("small", "pequeño", _SIZED),
    _adjective("beautiful", "bonito", _SIZED),
    _adjective("cheap", "barato", "thing food drink"), _adjective("expensive", "caro", "thing food drink"),
    _adjective("hot", "caliente", "warm"), _adjective("cold", "frío", "warm"),
    _adjective("fresh", "fresco", "food drink"), _adjective("good", "bueno", "food drink"),
)

# ---------------------------------------------------------------------------- determiners


@dataclass(frozen=True)
class Determiner:
    english: str
    spanish_forms: Tuple[str, str, str, str]  # masc sg, fem sg, masc pl, fem pl ("" = none)
    number: str  # "sg", "pl" or "any"
    with_mass: bool  # may precede a mass noun


DETERMINERS = (
    Determiner("a", ("un", "una", "", ""), "sg", False),
    Determiner("the", ("el", "la", "los", "las"), "any", True),
    Determiner("this", ("este", "esta", "", ""), "sg", True),
    Determiner("these", ("", "", "estos", "estas"), "pl", False),
    Determiner("that", ("ese", "esa", "", ""), "sg", True),
    Determiner("those", ("", "", "esos", "esas"), "pl", False),
    Determiner("my", ("mi", "mi", "mis", "mis"), "any", True),
    Determiner("your", ("tu", "tu", "tus", "tus"), "any", True),
    Determiner("our", ("nuestro", "nuestra", "nuestros", "nuestras"), "any", True),
    Determiner("two", ("", "", "dos", "dos"), "pl", False),
    Determiner("three", ("", "", "tres", "tres"), "pl", False),
    Determiner("some", ("", "", "unos", "unas"), "pl", False),
    Determiner("", ("", "", "", ""), "bare", True),  # bare plural or bare mass noun
)

# ---------------------------------------------------------------------------- verbs


@dataclass(frozen=True)
class Verb:
    english: Tuple[str, str, str, str]  # base, 3rd sg present, past, -ing
    infinitive: str
    object_kinds: frozenset
    stative: bool = False  # no progressive
    preposition: Tuple[str, str] = ("", "")  # ("in", "en") for "live in"
    irregular: Optional[Dict[str, Sequence[str]]] = None  # tense -> 5 forms, or "gerund" -> (form,)
    same_past_as_present: bool = False  # English "read": past needs an adverb to be unambiguous
    takes_adverb: bool = True  # "I lived in a city yesterday" is odd


def _verb(english, infinitive, kinds, **options):
    return Verb(tuple(english.split(",")), infinitive, frozenset(kinds.split()), **options)


VERBS = (
    _verb("have,has,had,having", "tener", "thing", stative=True, irregular={
        "present": ("tengo", "tienes", "tiene", "tenemos", "tienen"),
        "past": ("tuve", "tuviste", "tuvo", "tuvimos", "tuvieron"),
        "future": ("tendré", "tendrás", "tendrá", "tendremos", "tendrán")}),
    _verb("want,wants,wanted,wanting", "querer", "thing food drink", stative=True, irregular={
        "present": ("quiero", "quieres", "quiere", "queremos", "quieren"),
        "past": ("quise", "quisiste", "quiso", "quisimos", "quisieron"),
        "future": ("querré", "querrás", "querrá", "querremos", "querrán")}),
    _verb("need,needs,needed,needing", "necesitar", "thing food drink", stative=True),
    _verb("see,sees,saw,seeing", "ver", "thing", stative=True, irregular={
        "present": ("veo", "ves", "ve", "vemos", "ven"),
        "past": ("vi", "viste", "vio", "vimos", "vieron")}),
    _verb("find,finds,found,finding", "encontrar", "lose", stative=True, irregular={
        "present": ("encuentro", "encuentras", "encuentra", "encontramos", "encuentran")}),
    _verb("eat,eats,ate,eating", "comer", "food"),
    _verb("drink,drinks,drank,drinking", "beber", "drink"),
    _verb("read,reads,read,reading", "leer", "read", same_past_as_present=True, irregular={
        "past": ("leí", "leíste", "leyó", "leímos", "leyeron"), "gerund": ("leyendo",)}),
    _verb("write,writes,wrote,writing", "escribir", "write"),
    _verb("buy,buys,bought,buying", "comprar", "thing buy_food"),
    _verb("sell,sells,sold,selling", "vender", "thing"),
    _verb("open,opens,opened,opening", "abrir", "open"),
    _verb("close,closes,closed,closing", "cerrar", "open", irregular={
        "present": ("cierro", "cierras", "cierra", "cerramos", "cierran")}),
    _verb("clean,cleans,cleaned,cleaning", "limpiar", "clean"),
    _verb("wash,washes,washed,washing", "lavar", "wash"),
    _verb("paint,paints,painted,painting", "pintar", "paint"),
    _verb("prepare,prepares,prepared,preparing", "preparar", "cook"),
    _verb("use,uses,used,using", "usar", "use"),
    _verb("break,breaks,broke,breaking", "romper", "break"),
    _verb("look for,looks for,looked for,looking for", "buscar", "lose", irregular={
        "past": ("busqué", "buscaste", "buscó", "buscamos", "buscaron")}),
    _verb("live,lives,lived,living", "vivir", "place", preposition=("in", "en"), takes_adverb=False),
)

# Regular endings by infinitive class, persons in the order FIRST_SG .. THIRD_PL.
PRESENT_ENDINGS = {"ar": ("o", "as", "a", "amos", "an"), "er": ("o", "es", "e", "emos", "en"),
                   "ir": ("o", "es", "e", "imos", "en")}
PAST_ENDINGS = {"ar": ("é", "aste", "ó", "amos", "aron"), "er": ("í", "iste", "ió", "imos", "ieron"),
                "ir": ("í", "iste", "ió", "imos", "ieron")}
FUTURE_ENDINGS = ("é", "ás", "á", "emos", "án")  # added to the whole infinitive
GERUND_ENDINGS = {"ar": "ando", "er": "iendo", "ir": "iendo"}
ESTAR_PRESENT = ("estoy", "estás", "está", "estamos", "están")


def conjugate(verb: Verb, tense: str, person: int) -> str:
    """The Spanish verb form, e.g. ``conjugate(comer, "progressive", FIRST_PL) == "estamos comiendo"``."""
    irregular = verb.irregular or {}
    stem, verb_class = verb.infinitive[:-2], verb.infinitive[-2:]
    if tense == "progressive":
        gerund = irregular["gerund"][0] if "gerund" in irregular else stem + GERUND_ENDINGS[verb_class]
        return f"{ESTAR_PRESENT[person]} {gerund}"
    if tense in irregular:
        return irregular[tense][person]
    if tense == "present":
        return stem + PRESENT_ENDINGS[verb_class][person]
    if tense == "past":
        return stem + PAST_ENDINGS[verb_class][person]
    if tense == "future":
        return verb.infinitive + FUTURE_ENDINGS[person]
    raise ValueError(f"tense must be one of {TENSES}, got {tense!r}")


def english_verb_phrase(verb: Verb, tense: str, form: str, person: int, subject: str) -> List[str]:
    """English words from the subject to the verb, e.g. ``["does", "he", "eat"]``.

    Returns the subject in its place (questions invert it), so the caller appends the object.
    """
    base, third, past, ing = verb.english
    third_singular = person == THIRD_SG
    if tense == "progressive":
        be = "am" if person == FIRST_SG else ("is" if third_singular else "are")
        if form == "question":
            return [be, subject, ing]
        return [subject, be] + (["not"] if form == "negation" else []) + [ing]
    if tense == "future":
        if form == "question":
            return ["will", subject, base]
        return [subject, "will"] + (["not"] if form == "negation" else []) + [base]
    auxiliary = "did" if tense == "past" else ("does" if third_singular else "do")
    if form == "question":
        return [auxiliary, subject, base]
    if form == "negation":
        return [subject, auxiliary, "not", base]
    return [subject, past if tense == "past" else (third if third_singular else base)]


TIME_ADVERBS = {  # tense -> (english, spanish)
    "present": ("every day", "todos los días"),
    "progressive": ("now", "ahora"),
    "past": ("yesterday", "ayer"),
    "future": ("tomorrow", "mañana"),
}

# ---------------------------------------------------------------------------- noun phrases


def object_phrase(noun: Noun, determiner: Determiner, adjective: Optional[Adjective],
                  plural: bool) -> Tuple[str, str]:
    """English and Spanish of ``determiner (adjective) noun``, with agreement and "a"→"an"."""
    english_words = [adjective.english] if adjective else []
    english_words.append(noun.english_plural if plural else noun.english)
    if determiner.english == "a" and english_words[0][0] in "aeiou":
        english_words.insert(0, "an")
    elif determiner.english:
        english_words.insert(0, determiner.english)

    spanish_article = determiner.spanish_forms[2 * plural + noun.feminine]
    if noun.stressed_a and not plural and determiner.english in ("the", "a"):
        # "el agua fría": before a stressed a- the article takes the masculine form, while the
        # noun stays feminine (the adjective agrees as feminine; "esta agua" is unaffected).
        spanish_article = determiner.spanish_forms[0]
    spanish_words = [spanish_article] if spanish_article else []
    spanish_words.append(noun.spanish_plural if plural else noun.spanish)
    if adjective:
        spanish_words.append(adjective.agree(noun.feminine, plural))
    return " ".join(english_words), " ".join(spanish_words)


# Lookups by English word, for build_pair; and per-verb choices, computed once.
SUBJECTS_BY_ENGLISH = {subject.english: subject for subject in PRONOUN_SUBJECTS + NOUN_SUBJECTS}
VERBS_BY_ENGLISH = {verb.english[0]: verb for verb in VERBS}
NOUNS_BY_ENGLISH = {noun.english: noun for noun in NOUNS}
ADJECTIVES_BY_ENGLISH = {adjective.english: adjective for adjective in ADJECTIVES}
DETERMINERS_BY_ENGLISH = {determiner.english: determiner for determiner in DETERMINERS}
_OBJECT_NOUNS = {verb.infinitive: [noun for noun in NOUNS if noun.kinds & verb.object_kinds]
                 for verb in VERBS}
_NOUN_ADJECTIVES = {noun.english: [adj for adj in ADJECTIVES if adj.kinds & noun.kinds]
                    for noun in NOUNS}


def build_pair(subject: str, verb: str, tense: str, form: str, determiner: str, noun: str,
               adjective: Optional[str] = None, plural: bool = False,
               adverb: bool = False) -> Tuple[str, str]:
    """The (English, Spanish) pair for one choice of every grammar slot, named in English.

    ``build_pair("we", "eat", "progressive", "statement", "", "bread")`` gives
    ``("we are eating bread", "estamos comiendo pan")``. ``determiner=""`` is the bare plural or
    mass noun; ``verb`` is the English base form ("look for"); ``adverb=True`` appends the tense's
    time adverb. The combination is not checked against the selection rules of :func:`random_pair`.
    """
    if tense not in TENSES:
        raise ValueError(f"tense must be one of {TENSES}, got {tense!r}")
    if form not in FORMS:
        raise ValueError(f"form must be one of {FORMS}, got {form!r}")
    the_subject = SUBJECTS_BY_ENGLISH[subject]
    the_verb = VERBS_BY_ENGLISH[verb]
    english_object, spanish_object = object_phrase(
        NOUNS_BY_ENGLISH[noun], DETERMINERS_BY_ENGLISH[determiner],
        ADJECTIVES_BY_ENGLISH[adjective] if adjective else None, plural)

    english = english_verb_phrase(the_verb, tense, form, the_subject.person, the_subject.english)
    spanish = ([the_subject.spanish] if the_subject.spanish else []) + \
        (["no"] if form == "negation" else []) + [conjugate(the_verb, tense, the_subject.person)]
    english_preposition, spanish_preposition = the_verb.preposition
    if english_preposition:
        english.append(english_preposition)
        spanish.append(spanish_preposition)
    english.append(english_object)
    spanish.append(spanish_object)
    if adverb:
        english_adverb, spanish_adverb = TIME_ADVERBS[tense]
        english.append(english_adverb)
        spanish.append(spanish_adverb)
    english_text, spanish_text = " ".join(english), " ".join(spanish)
    if form == "question":
        english_text, spanish_text = english_text + "?", "¿" + spanish_text + "?"
    return english_text, spanish_text


def random_slots(rng: random.Random) -> Dict[str, Any]:
    """One choice of every grammar slot (:func:`build_pair`'s keyword arguments) drawn from the
    grammar, respecting which verbs take which objects, adjectives, tenses and adverbs."""
    subject = rng.choice(PRONOUN_SUBJECTS if rng.random() < 0.6 else NOUN_SUBJECTS)
    verb = rng.choice(VERBS)
    tense = rng.choice(TENSES[:1] + TENSES[2:] if verb.stative else TENSES)
    form = rng.choice(FORMS)

    noun = rng.choice(_OBJECT_NOUNS[verb.infinitive])
    if noun.mass:
        plural = False
        determiners = [d for d in DETERMINERS if d.with_mass]
    else:
        plural = rng.random() < 0.4
        determiners = [d for d in DETERMINERS
                       if d.number == "any" or d.number == ("pl" if plural else "sg")
                       or (d.number == "bare" and plural)]
    determiner = rng.choice(determiners)
    adjectives = _NOUN_ADJECTIVES[noun.english]
    adjective = rng.choice(adjectives).english if adjectives and rng.random() < 0.6 else None

    if verb.same_past_as_present and tense == "past":
        adverb = True  # "I read a book" alone would be present or past
    elif not verb.takes_adverb or (verb.stative and tense == "present"):
        adverb = False  # "I have a car every day" is not English
    else:
        adverb = rng.random() < 0.3
    return dict(subject=subject.english, verb=verb.english[0], tense=tense, form=form,
                determiner=determiner.english, noun=noun.english, adjective=adjective,
                plural=plural, adverb=adverb)


def random_pair(rng: random.Random) -> Tuple[str, str]:
    """One (English, Spanish) sentence pair drawn from the grammar (see :func:`random_slots`)."""
    return build_pair(**random_slots(rng))


# ---------------------------------------------------------------------------- corpus API


class Sentence(NamedTuple):
    """A generated pair with the grammar slots it was built from (:func:`random_slots`'s dict:
    subject, verb, tense, form, ...), which label it by grammar; ``person`` is the subject's."""
    english: str
    spanish: str
    slots: Dict[str, Any]

    @property
    def person(self) -> int:
        return SUBJECTS_BY_ENGLISH[self.slots["subject"]].person


def generate_sentences(n: int, seed: int = 0) -> List[Sentence]:
    """``n`` distinct sentences with their slots: :func:`generate_pairs`' pairs, in its order."""
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    rng = random.Random(seed)
    sentences: List[Sentence] = []
    seen = set()
    max_draws = 20 * n + 1000
    for _ in range(max_draws):
        if len(sentences) == n:
            break
        slots = random_slots(rng)
        english, spanish = build_pair(**slots)
        if english not in seen:
            seen.add(english)
            sentences.append(Sentence(english, spanish, slots))
    if len(sentences) < n:
        raise ValueError(f"could only draw {len(sentences)} distinct pairs in {max_draws} draws, "
                         f"asked for n={n}")
    return sentences


def generate_pairs(n: int, seed: int = 0) -> List[Tuple[str, str]]:
    """``n`` distinct (English, Spanish) pairs, the same ones for the same ``seed``.

    Distinct means distinct English sentences (each has exactly one translation here).
    The grammar holds several million sentences; asking for more than it can produce in a
    reasonable number of draws raises ``ValueError``.
    """
    return [(s.english, s.spanish) for s in generate_sentences(n, seed)]


class CorpusSplits(NamedTuple):
    train: List[Tuple[str, str]]
    valid: List[Tuple[str, str]]
    test: List[Tuple[str, str]]


def load_corpus(n_train: int, n_valid: int, n_test: int = 0, seed: int = 0) -> CorpusSplits:
    """Train / valid / test splits of generated pairs whose English sentences never overlap.

    All pairs come from one call of :func:`generate_pairs`, whose sentences are already
    distinct, so cutting the list in three keeps held-out sources out of training.
    """
    for name, value in (("n_train", n_train), ("n_valid", n_valid), ("n_test", n_test)):
        if value < 0:
            raise ValueError(f"{name} must be >= 0, got {value}")
    pairs = generate_pairs(n_train + n_valid + n_test, seed=seed)
    return CorpusSplits(pairs[:n_train], pairs[n_train:n_train + n_valid], pairs[n_train + n_valid:])
