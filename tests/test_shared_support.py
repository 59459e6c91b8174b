"""The helpers every report shares: statistics, the compute backend, the report writer."""
import csv
import json
import math

import matplotlib.pyplot as plt
import pytest

from agent import stats
from agent.compute import TaskError, run_tasks
from agent.report import command_line, write_report


# --- statistics: answers known by hand -------------------------------------------------------

def test_mean_ci_known_values():
    m, lo, hi = stats.mean_ci([1, 2, 3, 4, 5])
    # mean 3, sd sqrt(2.5), t(0.975, 4) = 2.776445
    h = 2.776445 * math.sqrt(2.5) / math.sqrt(5)
    assert m == 3 and lo == pytest.approx(3 - h, abs=1e-5) and hi == pytest.approx(3 + h, abs=1e-5)
    assert stats.mean_ci([7]) == (7, 7, 7)
    assert stats.mean_ci([4, 4, 4]) == (4, 4, 4)
    assert all(math.isnan(v) for v in stats.mean_ci([]))


def test_wilson_interval_stays_inside_zero_one():
    p, lo, hi = stats.proportion_ci(0, 10)
    assert p == 0 and lo == 0 and 0.25 < hi < 0.35      # Wilson: 0.2775
    p, lo, hi = stats.proportion_ci(10, 10)
    assert p == 1 and hi == 1 and 0.65 < lo < 0.75
    p, lo, hi = stats.proportion_ci(50, 100)
    assert lo == pytest.approx(0.4038, abs=1e-3) and hi == pytest.approx(0.5962, abs=1e-3)


def test_bootstrap_resamples_groups_and_is_seeded():
    groups = [[1, 1, 1], [0, 0], [1, 0], [1], [0, 0, 0, 1]]
    share = lambda gs: sum(sum(g) for g in gs) / sum(len(g) for g in gs)  # noqa: E731
    a = stats.bootstrap_ci(groups, share, seed=3)
    assert a == stats.bootstrap_ci(groups, share, seed=3)
    assert a[0] == pytest.approx(6 / 12)
    assert a[1] < a[0] < a[2]
    d = stats.paired_bootstrap_diff(groups, share, share, seed=3)
    assert d == (0.0, 0.0, 0.0)


def test_welch_and_pearson():
    t, p = stats.welch([1, 2, 3, 4], [1, 2, 3, 4])
    assert t == 0 and p == pytest.approx(1.0)
    t, p = stats.welch([10, 11, 12, 13], [1, 2, 3, 4])
    assert t > 0 and p < 0.001
    assert stats.welch([5, 5], [5, 5]) == (0.0, 1.0)
    r, p = stats.pearson([1, 2, 3, 4], [2, 4, 6, 8.5])
    assert r > 0.99
    assert math.isnan(stats.pearson([1, 1, 1], [1, 2, 3])[0])
    with pytest.raises(ValueError):
        stats.pearson([1, 2], [1])


# --- compute backend ---------------------------------------------------------------------------

def test_run_tasks_in_process_keeps_order_and_reports_each_result():
    seen = []
    out = run_tasks(math.factorial, [5, 3, 0], workers=0, on_result=lambda i, r: seen.append((i, r)))
    assert out == [120, 6, 1]
    assert seen == [(0, 120), (1, 6), (2, 1)]


def test_run_tasks_on_a_process_pool_gives_the_same_results():
    tasks = list(range(12))
    assert run_tasks(math.factorial, tasks, workers=2) == [math.factorial(t) for t in tasks]


@pytest.mark.parametrize("workers", [0, 2])
def test_a_failing_task_is_named(workers):
    with pytest.raises(TaskError) as e:
        run_tasks(math.sqrt, [4.0, -1.0, 9.0], workers=workers)
    assert e.value.index == 1 and "ValueError" in str(e.value)


def test_unreachable_scheduler_is_a_clear_error(monkeypatch):
    """The Dask client's failure to connect becomes one clear error.  The client gives up
    after 1 s here instead of compute's 20 s (the same failure, raised the same way: waiting
    out 20 s was a third of a minute of the suite for nothing)."""
    distributed = pytest.importorskip("distributed")
    real = distributed.Client
    monkeypatch.setattr(distributed, "Client", lambda address, **kw: real(address, **{**kw, "timeout": "1s"}))
    with pytest.raises(RuntimeError, match="cannot reach the Dask scheduler"):
        run_tasks(math.factorial, [1], scheduler="tcp://127.0.0.1:9")


# --- report ------------------------------------------------------------------------------------

def test_report_writes_page_figures_and_data(tmp_path):
    fig, ax = plt.subplots()
    ax.bar(["a", "b"], [1, 2])
    page = write_report(tmp_path, "Title <x>", [
        {"heading": "Results", "text": "First <b>para</b>.\n\nSecond.",
         "table": {"columns": ["name", "value"], "rows": [["a", 0.123456], ["b", float("nan")]]},
         "figures": [(fig, "bars", "Two bars")]},
    ], data={"rows.csv": [{"a": 1, "b": 2}, {"a": 3, "c": 4}], "all.json": {"x": [1, 2]}},
        command="ggp-persona playtest games/ticTacToe.kif")
    html = page.read_text()
    assert "Title &lt;x&gt;" in html and "&lt;b&gt;para&lt;/b&gt;" in html  # escaped
    assert '<img src="bars.png"' in html and "0.123" in html and "–" in html
    assert "ggp-persona playtest games/ticTacToe.kif" in html
    assert (tmp_path / "bars.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (tmp_path / "rows.csv").read_text().splitlines() == ["a,b,c", "1,2,", "3,,4"]
    assert json.loads((tmp_path / "all.json").read_text()) == {"x": [1, 2]}
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_a_large_table_is_written_compressed_and_read_back(tmp_path):
    """Report folders stay small (issue 53): a data table over ``COMPRESS_BYTES`` is written
    as NAME.gz, linked as such, and ``open_table`` reads either form; a later small table
    replaces the compressed one."""
    from agent.report import COMPRESS_BYTES, open_table
    rows = [{"label": f"p{i % 7}", "value": i} for i in range(COMPRESS_BYTES // 8)]
    page = write_report(tmp_path, "t", [], data={"decisions.csv": rows})
    assert not (tmp_path / "decisions.csv").exists() and (tmp_path / "decisions.csv.gz").is_file()
    assert (tmp_path / "decisions.csv.gz").stat().st_size < COMPRESS_BYTES
    assert "decisions.csv.gz" in page.read_text()
    with open_table(tmp_path, "decisions.csv") as f:
        back = list(csv.DictReader(f))
    assert back[0] == {"label": "p0", "value": "0"} and len(back) == len(rows)
    write_report(tmp_path, "t", [], data={"decisions.csv": rows[:3]})
    assert (tmp_path / "decisions.csv").is_file() and not (tmp_path / "decisions.csv.gz").exists()
    assert open_table(tmp_path, "missing.csv") is None


def test_report_plots_are_written_with_a_palette(tmp_path):
    """Plots are PNGs with a palette (a third of matplotlib's true-colour size: issue 53's
    1 MB report folders): exact where the plot has at most 256 colours, and the nearest
    colours otherwise; anything that is not a PNG is left as it is."""
    import io

    import matplotlib.pyplot as plt
    import numpy as np
    from PIL import Image

    from agent.report import compact_png
    fig, ax = plt.subplots()
    ax.bar(["a", "b"], [1, 2], color=["#1f77b4", "#ff7f0e"])
    ax.imshow(np.random.default_rng(0).random((40, 40)), extent=(0, 1, 0, 1))   # many colours
    write_report(tmp_path, "t", [{"heading": "h", "figures": [(fig, "bars", "c")]}])
    img = Image.open(tmp_path / "bars.png")
    assert img.format == "PNG" and img.mode == "P"
    buf = io.BytesIO()
    Image.new("RGB", (30, 20), (10, 200, 30)).save(buf, format="PNG")
    few = Image.open(io.BytesIO(compact_png(buf.getvalue())))
    assert few.mode == "P" and few.convert("RGB").getpixel((5, 5)) == (10, 200, 30)
    assert compact_png(b"not a png") == b"not a png"


def test_report_refuses_bad_names(tmp_path):
    with pytest.raises(ValueError):
        write_report(tmp_path, "t", [{"text": "no heading"}])
    with pytest.raises(ValueError):
        write_report(tmp_path, "t", [], data={"../escape.json": {}})


def test_command_line_is_relative_and_names_the_console_script(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "g.kif").write_text("")
    cmd = command_line(["/some/venv/bin/ggp-persona", "fit", str(tmp_path / "g.kif"), "--x", "a b"])
    assert cmd == "ggp-persona fit g.kif --x 'a b'"


def _pid(_task) -> int:
    import os
    return os.getpid()


def test_the_pool_is_kept_between_calls():
    first = set(run_tasks(_pid, range(6), workers=2))
    second = set(run_tasks(_pid, range(6), workers=2))
    assert first & second  # the same worker processes served both calls
