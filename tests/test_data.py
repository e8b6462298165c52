"""Tests of minitorch.utils.data: datasets, random_split, samplers, default_collate and
DataLoader (batching, shuffling with a seeded Generator, iterable datasets, option checks),
and, where PyTorch is installed, the same batches as torch.utils.data where the order does not
depend on the random numbers."""
import collections
import warnings

import numpy as np
import pytest

import minitorch
from minitorch.utils.data import (BatchSampler, ChainDataset, ConcatDataset, DataLoader, Dataset,
                                  IterableDataset, RandomSampler, Sampler, SequentialSampler,
                                  StackDataset, Subset, SubsetRandomSampler, TensorDataset,
                                  WeightedRandomSampler, default_collate, default_convert,
                                  get_worker_info, random_split)

Point = collections.namedtuple("Point", ["x", "y"])


def features_and_labels(n=10):
    x = minitorch.tensor(np.arange(n * 3, dtype=np.float32).reshape(n, 3))
    y = minitorch.arange(n)
    return x, y


class Squares(Dataset):
    """A map-style dataset that counts how it is read."""

    def __init__(self, n):
        self.n, self.single_reads, self.batch_reads = n, 0, 0

    def __getitem__(self, index):
        if not 0 <= index < self.n:
            raise IndexError(index)
        self.single_reads += 1
        return index * index

    def __len__(self):
        return self.n


class BatchedSquares(Squares):
    def __getitems__(self, indices):
        self.batch_reads += 1
        return [i * i for i in indices]


class Stream(IterableDataset):
    def __init__(self, n, with_len=True):
        self.n, self.with_len = n, with_len

    def __iter__(self):
        return iter(range(self.n))

    def __len__(self):
        if not self.with_len:
            raise TypeError("Stream has no length")
        return self.n


def test_minitorch_utils_data_is_importable_from_minitorch():
    assert minitorch.utils.data.DataLoader is DataLoader
    assert isinstance(minitorch.Generator().manual_seed(3), minitorch.Generator)
    # generic, as PyTorch's, so typed programs (class Pairs(Dataset[tuple]): ...) run unchanged
    assert Dataset[int] is not None and IterableDataset[str] is not None
    assert Sampler[int] is not None and DataLoader[tuple] is not None and Subset[int] is not None


def test_generator_seed_and_state():
    g = minitorch.Generator()
    assert g.initial_seed() == 67280421310721  # PyTorch's default: reproducible unseeded
    assert g.manual_seed(42) is g and g.initial_seed() == 42
    state = g.get_state()
    order = list(RandomSampler(Squares(8), generator=g))
    g.set_state(state)
    assert list(RandomSampler(Squares(8), generator=g)) == order
    assert list(RandomSampler(Squares(8), generator=minitorch.Generator())) == \
        list(RandomSampler(Squares(8), generator=minitorch.Generator()))
    new_seed = g.seed()
    assert g.initial_seed() == new_seed != 42
    with pytest.raises(TypeError, match="seed must be an int, got str"):
        g.manual_seed("7")
    assert g.device == "cpu" and "seed=" in repr(g)


# ------------------------------------------------------------------ datasets
def test_tensor_dataset_rows():
    x, y = features_and_labels()
    dataset = TensorDataset(x, y)
    assert len(dataset) == 10
    features, label = dataset[4]
    np.testing.assert_array_equal(features.numpy(), [12, 13, 14])
    assert label.item() == 4 and label.dtype == minitorch.int64
    with pytest.raises(ValueError, match=r"Size mismatch between tensors.*\[10, 9\]"):
        TensorDataset(x, y[:9])
    with pytest.raises(ValueError, match="at least one tensor"):
        TensorDataset()


def test_concat_dataset_indexes_across_parts():
    a, b = Squares(3), Squares(4)
    both = a + b
    assert isinstance(both, ConcatDataset) and len(both) == 7
    assert both.cumulative_sizes == [3, 7]
    assert [both[i] for i in range(7)] == [0, 1, 4, 0, 1, 4, 9]
    assert both[-1] == 9 and both[-7] == 0
    assert list(both) == [0, 1, 4, 0, 1, 4, 9]  # iteration stops at the IndexError
    with pytest.raises(ValueError, match="out of range"):
        both[-8]
    with pytest.raises(IndexError, match="out of range"):
        both[7]
    with pytest.raises(ValueError, match="empty iterable"):
        ConcatDataset([])
    with pytest.raises(ValueError, match="does not support IterableDataset"):
        ConcatDataset([a, Stream(3)])


def test_chain_and_stack_datasets():
    chained = Stream(2) + Stream(3)
    assert isinstance(chained, ChainDataset)
    assert list(chained) == [0, 1, 0, 1, 2] and len(chained) == 5
    with pytest.raises(TypeError, match=r"datasets\[1\] is a Squares"):
        list(ChainDataset([Stream(1), Squares(2)]))
    x, y = features_and_labels(4)
    stacked = StackDataset(x, y)
    assert len(stacked) == 4 and stacked[2][1].item() == 2
    named = StackDataset(features=x, label=y)
    assert sorted(named[1]) == ["features", "label"]
    with pytest.raises(ValueError, match="Size mismatch between datasets"):
        StackDataset(x, y[:3])
    with pytest.raises(ValueError, match="not both"):
        StackDataset(x, label=y)


def test_subset_reads_through_getitems_when_the_dataset_has_it():
    base = BatchedSquares(10)
    subset = Subset(base, [7, 2, 5])
    assert len(subset) == 3 and subset[0] == 49 and subset[-1] == 25
    assert subset.__getitems__([0, 2]) == [49, 25] and base.batch_reads == 1
    plain = Subset(Squares(10), [1, 3])
    assert plain.__getitems__([1, 0]) == [9, 1]

    class Doubled(Subset):
        def __getitem__(self, idx):
            return 2 * super().__getitem__(idx)

    with pytest.raises(NotImplementedError, match="overrides __getitem__ but not __getitems__"):
        Doubled(base, [1])


def test_random_split_by_counts_is_a_seeded_partition():
    dataset = Squares(10)
    parts = random_split(dataset, [3, 7], generator=minitorch.Generator().manual_seed(0))
    assert [len(p) for p in parts] == [3, 7]
    assert sorted(parts[0].indices + parts[1].indices) == list(range(10))
    again = random_split(dataset, [3, 7], generator=minitorch.Generator().manual_seed(0))
    assert again[0].indices == parts[0].indices
    other = random_split(dataset, [3, 7], generator=minitorch.Generator().manual_seed(1))
    assert other[1].indices != parts[1].indices
    # without a generator the global one is used, which manual_seed fixes
    minitorch.manual_seed(5)
    first = random_split(dataset, [5, 5])[0].indices
    minitorch.manual_seed(5)
    assert random_split(dataset, [5, 5])[0].indices == first


def test_random_split_by_fractions_deals_out_the_remainder():
    parts = random_split(Squares(10), [0.33, 0.33, 0.34])
    assert [len(p) for p in parts] == [4, 3, 3]  # floors 3, 3, 3; one left goes to the first
    assert [len(p) for p in random_split(Squares(7), [0.5, 0.5])] == [4, 3]
    with pytest.warns(UserWarning, match="Length of split at index 1 is 0"):
        assert [len(p) for p in random_split(Squares(2), [0.9, 0.1])] == [2, 0]


def test_random_split_errors():
    with pytest.raises(ValueError, match="Sum of input lengths does not equal.*11.*10"):
        random_split(Squares(10), [5, 6])
    with pytest.raises(ValueError, match="fraction at index 1 is not between 0 and 1"):
        random_split(Squares(10), [0.25, -0.25, 1.0])
    with pytest.raises(ValueError, match=r"lengths\[0\] must be a non-negative int"):
        random_split(Squares(10), [2.5, 7.5])
    with pytest.raises(TypeError, match="minitorch.Generator"):
        random_split(Squares(10), [5, 5], generator=np.random.default_rng(0))


# ------------------------------------------------------------------ samplers
def test_sequential_and_batch_samplers():
    assert list(SequentialSampler(Squares(4))) == [0, 1, 2, 3]
    batches = BatchSampler(SequentialSampler(Squares(7)), batch_size=3, drop_last=False)
    assert list(batches) == [[0, 1, 2], [3, 4, 5], [6]] and len(batches) == 3
    dropped = BatchSampler(range(7), batch_size=3, drop_last=True)
    assert list(dropped) == [[0, 1, 2], [3, 4, 5]] and len(dropped) == 2
    assert list(BatchSampler(range(6), 3, True)) == [[0, 1, 2], [3, 4, 5]]
    with pytest.raises(ValueError, match="batch_size should be a positive integer value, but "
                                         "got batch_size=0"):
        BatchSampler(range(3), 0, False)
    with pytest.raises(ValueError, match="drop_last should be a boolean value"):
        BatchSampler(range(3), 2, "yes")


def test_random_sampler_permutes_and_is_reproducible_with_a_generator():
    data = Squares(20)
    order = list(RandomSampler(data, generator=minitorch.Generator().manual_seed(7)))
    assert sorted(order) == list(range(20)) and order != list(range(20))
    assert list(RandomSampler(data, generator=minitorch.Generator().manual_seed(7))) == order
    # one generator, two passes: two different permutations
    sampler = RandomSampler(data, generator=minitorch.Generator().manual_seed(7))
    assert list(sampler) == order and list(sampler) != order
    # more samples than data: whole permutations back to back, then part of one
    long = list(RandomSampler(Squares(5), num_samples=12))
    assert len(long) == 12 and sorted(long[:5]) == sorted(long[5:10]) == list(range(5))
    assert len(set(long[10:])) == 2
    drawn = list(RandomSampler(Squares(3), replacement=True, num_samples=200))
    assert len(drawn) == 200 and set(drawn) == {0, 1, 2}


def test_random_sampler_without_generator_follows_manual_seed():
    minitorch.manual_seed(11)
    first = list(RandomSampler(Squares(30)))
    minitorch.manual_seed(11)
    assert list(RandomSampler(Squares(30))) == first


def test_subset_and_weighted_random_samplers():
    generator = minitorch.Generator().manual_seed(0)
    picked = list(SubsetRandomSampler([10, 20, 30, 40], generator=generator))
    assert sorted(picked) == [10, 20, 30, 40]
    weights = [0.0, 1.0, 3.0]
    drawn = list(WeightedRandomSampler(weights, 4000,
                                       generator=minitorch.Generator().manual_seed(0)))
    counts = np.bincount(drawn, minlength=3)
    assert counts[0] == 0 and 2.5 < counts[2] / counts[1] < 3.5
    unique = list(WeightedRandomSampler([1, 1, 5, 0], 3, replacement=False))
    assert sorted(unique) == [0, 1, 2]
    with pytest.raises(ValueError, match="num_samples should be a positive integer"):
        WeightedRandomSampler(weights, 0)
    with pytest.raises(ValueError, match="weights should be a 1d sequence"):
        WeightedRandomSampler([[1, 2]], 1)
    with pytest.raises(ValueError, match="without replacement from 2 non-zero weights"):
        WeightedRandomSampler(weights, 3, replacement=False)
    with pytest.raises(ValueError, match="non-negative"):
        WeightedRandomSampler([1, -1], 1)


def test_sampler_errors():
    with pytest.raises(TypeError, match="replacement should be a boolean value"):
        RandomSampler(Squares(3), replacement=1)
    with pytest.raises(ValueError, match="num_samples should be a positive integer value, but "
                                         "got num_samples=0"):
        RandomSampler(Squares(0))
    with pytest.raises(ValueError, match="empty data_source"):
        list(RandomSampler(Squares(0), num_samples=3))


# ------------------------------------------------------------------ collate
def test_default_collate_stacks_leaves_by_structure():
    batch = default_collate([1, 2, 3])
    assert batch.dtype == minitorch.int64 and batch.tolist() == [1, 2, 3]
    assert default_collate([0.5, 1.5]).dtype == minitorch.float64
    assert default_collate([True, False]).dtype == minitorch.bool
    assert default_collate(["a", "b"]) == ["a", "b"]
    arrays = default_collate([np.ones(2, np.float32), np.zeros(2, np.float32)])
    assert arrays.dtype == minitorch.float32 and arrays.shape == (2, 2)
    assert default_collate([np.float64(1.0), np.float64(2.0)]).dtype == minitorch.float64
    assert default_collate([np.int32(1), np.int32(2)]).dtype == minitorch.int32
    stacked = default_collate([minitorch.ones(2, 3), minitorch.zeros(2, 3)])
    assert stacked.shape == (2, 2, 3) and stacked[0].sum().item() == 6

    samples = [{"x": minitorch.tensor([1.0, 2.0]), "meta": {"id": i, "name": f"s{i}"}}
               for i in range(3)]
    batch = default_collate(samples)
    assert batch["x"].shape == (3, 2) and batch["meta"]["id"].tolist() == [0, 1, 2]
    assert batch["meta"]["name"] == ["s0", "s1", "s2"]
    assert default_collate([("a", 1), ("b", 2)])[0] == ("a", "b")  # PyTorch's zip(*) tuple

    points = default_collate([Point(1, 2.0), Point(3, 4.0)])
    assert isinstance(points, Point) and points.x.tolist() == [1, 3]
    assert points.y.dtype == minitorch.float64

    pairs = default_collate([(1, 2), (3, 4)])  # tuples become a list, as PyTorch
    assert isinstance(pairs, list) and [p.tolist() for p in pairs] == [[1, 3], [2, 4]]
    lists = default_collate([[1, 2], [3, 4]])
    assert isinstance(lists, list) and lists[1].tolist() == [2, 4]


def test_default_collate_errors():
    with pytest.raises(RuntimeError, match="each element in list of batch should be of equal "
                                           "size"):
        default_collate([[1, 2], [3]])
    with pytest.raises(TypeError, match="found <class 'object'>"):
        default_collate([object(), object()])
    with pytest.raises(TypeError, match="found <U1"):
        default_collate([np.array(["a"]), np.array(["b"])])
    with pytest.raises(ValueError, match="stack"):
        default_collate([minitorch.ones(2), minitorch.ones(3)])


def test_default_convert_turns_arrays_into_tensors_only():
    converted = default_convert({"a": np.arange(3), "b": [np.float32(2.0), "text", 5],
                                 "c": (np.ones(1),)})
    assert isinstance(converted["a"], minitorch.Tensor) and converted["a"].tolist() == [0, 1, 2]
    assert isinstance(converted["b"][0], minitorch.Tensor) and converted["b"][1:] == ["text", 5]
    assert isinstance(converted["c"], list)
    assert default_convert(Point(np.zeros(1), 2)).y == 2
    assert default_convert("text") == "text"


# ------------------------------------------------------------------ DataLoader
def test_loader_batches_in_order_and_len():
    x, y = features_and_labels(10)
    loader = DataLoader(TensorDataset(x, y), batch_size=4)
    batches = list(loader)
    assert len(loader) == 3 and len(batches) == 3
    assert [b[1].tolist() for b in batches] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert isinstance(batches[0], list) and batches[0][0].shape == (4, 3)
    assert batches[0][0].dtype == minitorch.float32
    dropped = DataLoader(TensorDataset(x, y), batch_size=4, drop_last=True)
    assert len(dropped) == 2 and [b[1].tolist() for b in dropped] == [[0, 1, 2, 3],
                                                                      [4, 5, 6, 7]]
    single = list(DataLoader(TensorDataset(x, y)))
    assert len(single) == 10 and single[3][0].shape == (1, 3)


def test_shuffle_covers_everything_and_is_reproducible_with_a_generator():
    x, y = features_and_labels(12)

    def epochs(seed):
        loader = DataLoader(TensorDataset(x, y), batch_size=5, shuffle=True,
                            generator=minitorch.Generator().manual_seed(seed))
        return [[b[1].tolist() for b in loader] for _ in range(2)]

    first, second = epochs(0)
    assert sorted(sum(first, [])) == list(range(12)) and [len(b) for b in first] == [5, 5, 2]
    assert first != second  # a new order each epoch
    assert epochs(0) == [first, second] and epochs(1) != [first, second]
    # the batch rows stay aligned: each label is the row's first feature / 3
    for xb, yb in DataLoader(TensorDataset(x, y), batch_size=5, shuffle=True):
        np.testing.assert_array_equal(xb.numpy()[:, 0], yb.numpy() * 3)


def test_sampler_batch_sampler_and_no_batching():
    data = Squares(6)
    assert [b.tolist() for b in DataLoader(data, batch_size=2, sampler=[5, 4, 3, 2])] == \
        [[25, 16], [9, 4]]
    loader = DataLoader(data, batch_sampler=[[0, 5], [1], [2, 3, 4]])
    assert [b.tolist() for b in loader] == [[0, 25], [1], [4, 9, 16]] and len(loader) == 3
    assert loader.batch_size is None and not loader.drop_last
    unbatched = DataLoader(data, batch_size=None)
    assert list(unbatched) == [0, 1, 4, 9, 16, 25] and len(unbatched) == 6
    custom = DataLoader(data, batch_size=3, collate_fn=lambda samples: sum(samples))
    assert list(custom) == [5, 50]


def test_loader_reads_a_batch_through_getitems():
    data = BatchedSquares(7)
    assert [b.tolist() for b in DataLoader(data, batch_size=3)] == [[0, 1, 4], [9, 16, 25],
                                                                    [36]]
    assert data.batch_reads == 3 and data.single_reads == 0
    subset_loader = DataLoader(Subset(data, [6, 1]), batch_size=2)
    assert [b.tolist() for b in subset_loader] == [[36, 1]]


def test_iterable_dataset_is_read_as_a_stream():
    loader = DataLoader(Stream(7), batch_size=3)
    assert [b.tolist() for b in loader] == [[0, 1, 2], [3, 4, 5], [6]] and len(loader) == 3
    dropped = DataLoader(Stream(7), batch_size=3, drop_last=True)
    assert [b.tolist() for b in dropped] == [[0, 1, 2], [3, 4, 5]] and len(dropped) == 2
    assert list(DataLoader(Stream(3), batch_size=None)) == [0, 1, 2]
    with pytest.raises(TypeError, match="no length"):
        len(DataLoader(Stream(3, with_len=False), batch_size=2))
    assert [b.tolist() for b in DataLoader(Stream(3, with_len=False), batch_size=2)] == \
        [[0, 1], [2]]


def test_num_workers_runs_in_process_with_the_same_batches():
    x, y = features_and_labels(9)
    called = []
    plain = [b[1].tolist() for b in DataLoader(TensorDataset(x, y), batch_size=4)]
    workers = DataLoader(TensorDataset(x, y), batch_size=4, num_workers=3,
                         worker_init_fn=called.append, prefetch_factor=4,
                         persistent_workers=True, pin_memory=True, timeout=5)
    assert [b[1].tolist() for b in workers] == plain and workers.prefetch_factor == 4
    assert DataLoader(Squares(2), num_workers=2).prefetch_factor == 2
    assert called == [] and get_worker_info() is None


def test_loader_trains_a_model():
    minitorch.manual_seed(0)
    x = minitorch.randn(64, 2)
    y = x @ minitorch.tensor([[2.0], [-1.0]]) + 0.5
    model = minitorch.nn.Linear(2, 1)
    opt = minitorch.optim.SGD(model.parameters(), lr=0.1)
    loader = DataLoader(TensorDataset(x, y), batch_size=16, shuffle=True,
                        generator=minitorch.Generator().manual_seed(0))
    for _ in range(40):
        for xb, yb in loader:
            opt.zero_grad()
            loss = ((model(xb) - yb) ** 2).mean()
            loss.backward()
            opt.step()
    assert loss.item() < 1e-4
    np.testing.assert_allclose(model.weight.detach().numpy(), [[2.0, -1.0]], atol=1e-2)


def test_loader_option_errors():
    data = Squares(4)
    with pytest.raises(ValueError, match="sampler option is mutually exclusive with shuffle"):
        DataLoader(data, sampler=[0, 1], shuffle=True)
    with pytest.raises(ValueError, match="batch_sampler option is mutually exclusive"):
        DataLoader(data, batch_sampler=[[0]], batch_size=2)
    with pytest.raises(ValueError, match="batch_sampler option is mutually exclusive"):
        DataLoader(data, batch_sampler=[[0]], drop_last=True)
    with pytest.raises(ValueError, match="mutually exclusive with drop_last"):
        DataLoader(data, batch_size=None, drop_last=True)
    with pytest.raises(ValueError, match="expected unspecified shuffle option, but got "
                                         "shuffle=True"):
        DataLoader(Stream(3), shuffle=True)
    with pytest.raises(ValueError, match="expected unspecified sampler option"):
        DataLoader(Stream(3), sampler=[0])
    with pytest.raises(ValueError, match="expected unspecified batch_sampler option"):
        DataLoader(Stream(3), batch_sampler=[[0]])
    with pytest.raises(ValueError, match="num_workers option should be a non-negative int"):
        DataLoader(data, num_workers=-1)
    with pytest.raises(ValueError, match="timeout option should be non-negative"):
        DataLoader(data, timeout=-1)
    with pytest.raises(ValueError, match="prefetch_factor option could only be specified"):
        DataLoader(data, prefetch_factor=2)
    with pytest.raises(ValueError, match="persistent_workers option needs num_workers > 0"):
        DataLoader(data, persistent_workers=True)
    with pytest.raises(ValueError, match="multiprocessing_context can only be used"):
        DataLoader(data, multiprocessing_context="fork")
    with pytest.raises(ValueError, match="batch_size should be a positive integer value"):
        DataLoader(data, batch_size=0)
    with pytest.raises(ValueError, match="batch_size should be a positive integer value"):
        DataLoader(Stream(3), batch_size=-2)
    loader = DataLoader(data, batch_size=2)
    with pytest.raises(ValueError, match="batch_size attribute should not be set after "
                                         "DataLoader is initialized"):
        loader.batch_size = 3
    loader.collate_fn = default_collate  # not one of the fixed attributes


def test_custom_sampler_subclass():
    class Reversed(Sampler):
        def __init__(self, data):
            self.data = data

        def __iter__(self):
            return iter(range(len(self.data) - 1, -1, -1))

        def __len__(self):
            return len(self.data)

    data = Squares(5)
    assert [b.tolist() for b in DataLoader(data, batch_size=2, sampler=Reversed(data))] == \
        [[16, 9], [4, 1], [0]]


# ------------------------------------------------------------------ parity with PyTorch
def to_plain(value, torch):
    """Batches of either library as nested plain values plus dtype names, to compare."""
    if isinstance(value, minitorch.Tensor):
        return ("tensor", str(value.dtype).split(".")[-1], value.tolist())
    if isinstance(value, torch.Tensor):
        return ("tensor", str(value.dtype).split(".")[-1], value.tolist())
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return (type(value).__name__,) + tuple(to_plain(v, torch) for v in value)
    if isinstance(value, dict):
        return {key: to_plain(v, torch) for key, v in value.items()}
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, [to_plain(v, torch) for v in value])
    return value


COLLATE_CASES = {
    "ints": [1, 2, 3],
    "floats": [0.5, 2.0],
    "bools": [True, False],
    "strings": ["a", "b"],
    "float64 arrays": [np.arange(3.0), np.ones(3)],
    "float32 arrays": [np.arange(4, dtype=np.float32).reshape(2, 2)] * 3,
    "int64 scalars": [np.int64(3), np.int64(4)],
    "dicts": [{"a": 1, "b": [1.0, 2.0], "c": "x"}, {"a": 2, "b": [3.0, 4.0], "c": "y"}],
    "namedtuples": [Point(1, np.zeros(2)), Point(2, np.ones(2))],
    "tuples": [(1, 2.5, "s"), (3, 4.5, "t")],
    "nested": [[{"k": (1, 2)}], [{"k": (3, 4)}]],
}


@pytest.mark.parametrize("name", sorted(COLLATE_CASES))
def test_default_collate_matches_pytorch(name):
    torch = pytest.importorskip("torch", reason="PyTorch not installed: parity test skipped")
    from torch.utils.data import default_collate as torch_collate
    batch = COLLATE_CASES[name]
    assert to_plain(default_collate(batch), torch) == to_plain(torch_collate(batch), torch)


@pytest.mark.parametrize("options", [
    dict(batch_size=3), dict(batch_size=3, drop_last=True), dict(batch_size=1),
    dict(batch_size=None), dict(batch_size=4, sampler=[9, 0, 4, 4, 2]),
    dict(batch_sampler=[[1, 2], [9], [3, 4, 5]])], ids=str)
def test_loader_batches_match_pytorch(options):
    torch = pytest.importorskip("torch", reason="PyTorch not installed: parity test skipped")
    tud = torch.utils.data
    samples = [{"x": np.full(2, i, np.float32), "label": i, "weight": i / 2,
                "point": Point(i, [i, -i])} for i in range(10)]

    class Samples(Dataset, tud.Dataset):
        def __getitem__(self, i):
            return samples[i]

        def __len__(self):
            return len(samples)

    mine = DataLoader(Samples(), **options)
    theirs = tud.DataLoader(Samples(), **options)
    assert len(mine) == len(theirs)
    assert [to_plain(b, torch) for b in mine] == [to_plain(b, torch) for b in theirs]


def test_tensor_dataset_and_stream_batches_match_pytorch():
    torch = pytest.importorskip("torch", reason="PyTorch not installed: parity test skipped")
    tud = torch.utils.data
    x = np.arange(21, dtype=np.float32).reshape(7, 3)
    y = np.arange(7)
    mine = DataLoader(TensorDataset(minitorch.tensor(x), minitorch.tensor(y)), batch_size=3)
    theirs = tud.DataLoader(tud.TensorDataset(torch.tensor(x), torch.tensor(y)), batch_size=3)
    assert [to_plain(b, torch) for b in mine] == [to_plain(b, torch) for b in theirs]

    class TorchStream(tud.IterableDataset):
        def __iter__(self):
            return iter(range(7))

        def __len__(self):
            return 7

    for options in (dict(batch_size=3), dict(batch_size=3, drop_last=True),
                    dict(batch_size=None)):
        mine, theirs = DataLoader(Stream(7), **options), tud.DataLoader(TorchStream(), **options)
        assert len(mine) == len(theirs)
        assert [to_plain(b, torch) for b in mine] == [to_plain(b, torch) for b in theirs]


@pytest.mark.parametrize("n, lengths", [(10, [0.33, 0.33, 0.34]), (7, [0.5, 0.5]),
                                        (11, [0.1, 0.2, 0.3, 0.4]), (10, [3, 7])])
def test_random_split_lengths_match_pytorch(n, lengths):
    torch = pytest.importorskip("torch", reason="PyTorch not installed: parity test skipped")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = torch.utils.data.random_split(range(n), lengths)
        mine = random_split(Squares(n), lengths)
    assert [len(p) for p in mine] == [len(p) for p in theirs]


def test_sampler_lengths_match_pytorch():
    torch = pytest.importorskip("torch", reason="PyTorch not installed: parity test skipped")
    tud = torch.utils.data
    data = list(range(10))
    for mine, theirs in [
        (RandomSampler(data, num_samples=23), tud.RandomSampler(data, num_samples=23)),
        (RandomSampler(data, replacement=True, num_samples=5),
         tud.RandomSampler(data, replacement=True, num_samples=5)),
        (BatchSampler(range(10), 4, False), tud.BatchSampler(range(10), 4, False)),
        (BatchSampler(range(10), 4, True), tud.BatchSampler(range(10), 4, True)),
        (SubsetRandomSampler([1, 5, 7]), tud.SubsetRandomSampler([1, 5, 7])),
        (WeightedRandomSampler([1, 2], 6), tud.WeightedRandomSampler([1, 2], 6)),
    ]:
        assert len(mine) == len(theirs) == len(list(mine)) == len(list(theirs))
