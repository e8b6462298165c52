"""benchmarks/report.py writes each script's latest table into its own section of the file,
leaving the other scripts' sections as they were."""
import datetime
import importlib.util
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _load_report():
    spec = importlib.util.spec_from_file_location("benchmark_report",
                                                  ROOT / "benchmarks" / "report.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


report = _load_report()
WHEN = datetime.datetime(2030, 1, 2, 3, 4, tzinfo=datetime.timezone.utc)


def _write(path, script, rows, command="python benchmarks/x.py --quick", **kwargs):
    return report.write_table(script, ["threads", "ms", "ratio"], rows, threads=[1, 2],
                              command=command, path=path, now=WHEN, **kwargs)


def _section(text, script):
    """The lines of ``script``'s section, up to the next section."""
    lines = text.splitlines()
    start = lines.index(f"## {script}")
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")),
               len(lines))
    return lines[start:end]


def test_creates_the_file_with_a_header_and_the_table(tmp_path):
    path = tmp_path / "docs" / "benchmarks.md"
    _write(path, "bench_a.py", [[1, "2.5", "1.10x"], [2, "1.5", None]], notes=["ratio = a/b"])
    text = path.read_text()
    assert text.startswith("# Benchmarks\n") and "written by the scripts" in text.lower()
    section = _section(text, "bench_a.py")
    run_line = section[2]
    assert run_line.startswith("2030-01-02 03:04 UTC · ")
    assert "threads 1, 2 of" in run_line
    assert run_line.endswith("`python benchmarks/x.py --quick`")
    assert report.cpu_model() in run_line
    table = [line for line in section if line.startswith("|")]
    assert table == ["| threads | ms | ratio |", "|---|---|---|",
                     "| 1 | 2.5 | 1.10x |", "| 2 | 1.5 |  |"]
    assert "ratio = a/b" in section


def test_a_second_run_replaces_only_its_own_section(tmp_path):
    path = tmp_path / "benchmarks.md"
    _write(path, "bench_a.py", [[1, "10.0", "1.00x"]])
    _write(path, "bench_b.py", [[1, "20.0", "2.00x"]], command="python benchmarks/b.py")
    before_b = _section(path.read_text(), "bench_b.py")

    _write(path, "bench_a.py", [[1, "30.0", "3.00x"], [2, "40.0", "4.00x"]])
    text = path.read_text()
    assert text.count("## bench_a.py") == 1 and text.count("## bench_b.py") == 1
    section_a = _section(text, "bench_a.py")
    assert "| 1 | 30.0 | 3.00x |" in section_a and "| 2 | 40.0 | 4.00x |" in section_a
    assert "10.0" not in text
    assert _section(text, "bench_b.py") == before_b
    assert text.index("## bench_a.py") < text.index("## bench_b.py")  # order kept
    assert text.startswith("# Benchmarks\n") and text.count("# Benchmarks") == 1
    assert not [p for p in tmp_path.iterdir() if p.name != "benchmarks.md"]  # no temp file left


def test_text_outside_the_sections_is_kept(tmp_path):
    path = tmp_path / "benchmarks.md"
    path.write_text("# Benchmarks\n\nMy own preamble.\n\n## bench_c.py\n\nold table\n")
    _write(path, "bench_a.py", [[1, "1.0", "1.00x"]])
    text = path.read_text()
    assert text.startswith("# Benchmarks\n\nMy own preamble.\n\n## bench_c.py\n\nold table\n\n")
    assert "## bench_a.py" in text


def test_cells_with_pipes_are_escaped_and_bad_rows_are_refused(tmp_path):
    path = tmp_path / "benchmarks.md"
    _write(path, "bench_a.py", [[1, "a|b", "x"]])
    assert "| 1 | a\\|b | x |" in path.read_text()
    with pytest.raises(ValueError, match="rows: each row needs 3 cells"):
        _write(path, "bench_a.py", [[1, "2.0"]])
    with pytest.raises(ValueError, match="script"):
        _write(path, "", [[1, "2.0", "x"]])


def test_the_command_line_is_given_from_the_repository_root():
    argv = [str(ROOT / "benchmarks" / "bench_transformer.py"), "--steps", "5", "--no-report"]
    assert report.command_line(argv) == (
        "python benchmarks/bench_transformer.py --steps 5 --no-report")


@pytest.mark.parametrize("cpuinfo, expected", [
    ("processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 26\nmodel\t\t: 2\n"
     "model name\t: AMD EPYC\n\nprocessor\t: 1\ncpu family\t: 25\n", "AMD EPYC, family 26 model 2"),
    ("processor\t: 0\nBogoMIPS\t: 50.00\nModel\t\t: Raspberry Pi 4\n", "Raspberry Pi 4"),
])
def test_cpu_model_names_the_generation_where_cpuinfo_gives_it(tmp_path, monkeypatch, cpuinfo,
                                                               expected):
    """One model name covers several generations ("AMD EPYC": Zen 4 and Zen 5), so a table's
    run line also carries the first processor's family and model numbers where they exist."""
    fake = tmp_path / "cpuinfo"
    fake.write_text(cpuinfo)
    real_open = open
    monkeypatch.setattr(report, "open", lambda path, *a, **k: real_open(
        fake if path == "/proc/cpuinfo" else path, *a, **k), raising=False)
    assert report.cpu_model() == expected
