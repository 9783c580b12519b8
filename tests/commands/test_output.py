"""Tables every command prints: nothing a person needs to read is cut at a narrow terminal."""

from __future__ import annotations

from rich.table import Table

from ragcourt.commands.output import console, print_table


def test_a_table_too_wide_for_the_console_keeps_names_whole(monkeypatch) -> None:
    """Narrower than even the wrapped table: headers and multi-word values wrap, then the table runs past the
    console (the terminal wraps the lines) rather than cutting a name or a number."""
    monkeypatch.setattr(console, "_width", 40)
    rows = [["1", "a_rather_long_system_name_k1", "1509.7", "[1506, 1513]"],
            ["2", "a_rather_long_system_name_k5", "1507.0", "n/a (no per-question outcomes)"]]
    with console.capture() as captured:
        print_table(Table(), ["#", "system", "Elo", "95% CI"], rows)
    text = captured.get()
    assert "…" not in text and "a_rather_long_system_name_k1" in text and "a_rather_long_system_name_k5" in text
    assert "[1506," in text and "1513]" in text and "per-question" in text



def test_frames_and_ids_print_whole_at_80_columns(monkeypatch) -> None:
    import pandas as pd

    from ragcourt.commands.output import print_frame

    monkeypatch.setattr(console, "_width", 80)
    frame = pd.DataFrame({"sample_id": ["5a8c4c625542995e66a475a1"], "why": ["element list changed (edited by a "
                          "person): 1 -> 2 elements"], "share": [0.5], "note": [None], "[red]x": ["[bold]y"]})
    with console.capture() as captured:
        print_frame("rows [of] a frame", frame)
    text = captured.get()
    assert "5a8c4c625542995e66a475a1" in text and "…" not in text
    assert "0.500" in text and "n/a" in text and "[red]x" in text and "[bold]y" in text and "[of]" in text
