"""The example notebook (python/examples/notebook.ipynb) runs headless from top to bottom."""

from __future__ import annotations

import nbformat
from nbclient import NotebookClient

from conftest import REPO


def test_the_example_notebook_runs():
    path = REPO / "python" / "examples" / "notebook.ipynb"
    notebook = nbformat.read(path, as_version=4)
    NotebookClient(notebook, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}).execute()
    outputs = [o for cell in notebook.cells if cell.cell_type == "code" for o in cell.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    html = [o["data"]["text/html"] for o in outputs if "text/html" in o.get("data", {})]
    assert any("<iframe src=\"http://127.0.0.1:" in h for h in html), "the server cell shows no iframe"
