"""Imports run one way (DESIGN §3, issue 35): no upward import, no same-rank import, no circle, no loose module."""

from __future__ import annotations

from pathlib import Path

from tests.helpers.import_graph import find_violations

REPO = Path(__file__).resolve().parent.parent


def test_imports_run_one_way_and_never_in_a_circle() -> None:
    violations = [v.line() for v in find_violations(REPO)]
    assert violations == [], "\n".join(violations)


def _tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def test_the_checker_names_an_upward_import_a_circle_and_a_loose_module(tmp_path: Path) -> None:
    # The same checker on a small tree that breaks each rule once: it must say so, file and kind.
    root = _tree(tmp_path, {
        "daemon/__init__.py": "",
        "daemon/alerts/__init__.py": "",
        "daemon/alerts/tracker.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from daemon.notify import slack\n",
        "daemon/notify/__init__.py": "",
        "daemon/notify/slack.py": "from daemon.notify import email\n",
        "daemon/notify/email.py": "from daemon.notify import slack\n",
        "daemon/helpers.py": "",
        "spark/__init__.py": "", "config/__init__.py": "", "rules/__init__.py": "",
    })
    kinds = {(v.line().split(": ")[1], v.line().split(":")[0]) for v in find_violations(root)}
    assert ("upward", "daemon/alerts/tracker.py") in kinds
    assert ("cycle", "daemon/notify/slack.py") in kinds
    assert ("unranked", "daemon/helpers.py") in kinds


def test_coordination_sits_below_alerts_beside_the_store_and_above_common(tmp_path: Path) -> None:
    # DESIGN §3: daemon.alerts may use the coordinator; the coordinator uses neither alerts nor the store.
    root = _tree(tmp_path, {
        "daemon/__init__.py": "", "daemon/alerts/__init__.py": "", "daemon/store/__init__.py": "",
        "daemon/common/__init__.py": "", "daemon/coordination/__init__.py": "",
        "daemon/alerts/incidents.py": "from daemon.coordination import lease\n",
        "daemon/coordination/lease.py": "from daemon.common import sdnotify\n",
        "daemon/common/sdnotify.py": "",
        "daemon/coordination/sqlite.py": "import daemon.alerts.db\nimport daemon.store.writer\n",
        "daemon/alerts/db.py": "", "daemon/store/writer.py": "",
        "spark/__init__.py": "", "config/__init__.py": "", "rules/__init__.py": "",
    })
    found = {(v.line().split(": ")[1], v.importer, v.imported) for v in find_violations(root)}
    assert found == {
        ("upward", "daemon.coordination.sqlite", "daemon.alerts.db"),
        ("same-rank", "daemon.coordination.sqlite", "daemon.store.writer"),
    }
