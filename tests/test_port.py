"""``buildingai port``: only import lines change, by the rule in ``buildingai/port.py``, and the
line numbers of everything else stay."""

import re
import subprocess
import sys
import textwrap

import pytest

from buildingai.cli import main
from buildingai.port import rewrite_imports

PROGRAM = textwrap.dedent(
    """\
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    import torch.nn.parallel
    import torchvision, torch
    import numpy as np, torch as th
    from torch import nn, optim
    from torch.utils.data import (
        DataLoader,
        Dataset,
    )
    from torchvision import datasets
    from . import local


    def f():
        import torch.optim.lr_scheduler as sched
        from torch.optim.lr_scheduler import StepLR
        return "import torch", torch.zeros(2)  # torch stays
    import torch.\\
        cuda
    """
)

EXPECTED = textwrap.dedent(
    """\
    import buildingai as torch
    import buildingai.nn as nn
    import buildingai.nn.functional as F
    import buildingai.nn.parallel, buildingai as torch
    import torchvision, buildingai as torch
    import numpy as np, buildingai as th
    from buildingai import nn, optim
    from buildingai.utils.data import (
        DataLoader,
        Dataset,
    )
    from torchvision import datasets
    from . import local


    def f():
        import buildingai.optim.lr_scheduler as sched
        from buildingai.optim.lr_scheduler import StepLR
        return "import torch", torch.zeros(2)  # torch stays
    import buildingai.cuda, buildingai as torch

    """
)


def test_only_torch_imports_change_and_lines_keep_their_numbers():
    ported, changes = rewrite_imports(PROGRAM)
    assert ported == EXPECTED
    assert len(ported.splitlines()) == len(PROGRAM.splitlines())
    assert [change.line for change in changes] == [1, 2, 3, 4, 5, 6, 7, 8, 17, 18, 20]
    assert str(changes[0]) == "line 1: import torch  ->  import buildingai as torch"
    assert changes[7].after == "from buildingai.utils.data import ( DataLoader, Dataset, )"


def test_a_program_without_torch_imports_is_unchanged():
    source = "import numpy as np\nimport torchvision\nprint('torch')\n"
    assert rewrite_imports(source) == (source, [])


def test_the_ported_imports_resolve():
    ported, _ = rewrite_imports(
        "import torch\nimport torch.nn.functional as F\nimport torch.nn.parallel\n"
        "from torch.utils.data import DataLoader, TensorDataset, random_split\n"
        "from torch.optim.lr_scheduler import StepLR, CosineAnnealingLR\n"
        "from torch.utils.data.distributed import DistributedSampler\n"
        "import torch.backends.cudnn as cudnn\n"
        "from torch.cuda.amp import autocast, GradScaler\n"
        "from torch.hub import load_state_dict_from_url\n"
    )
    namespace = {}
    exec(ported, namespace)
    assert namespace["torch"].__name__ == "buildingai"
    assert namespace["cudnn"].__name__ == "buildingai.backends.cudnn"


def test_command_writes_stdout_and_lists_changes_on_stderr(tmp_path, capsys):
    program = tmp_path / "train.py"
    program.write_text("import torch\nx = 1\n")
    assert main(["port", str(program)]) == 0
    out, err = capsys.readouterr()
    assert out == "import buildingai as torch\nx = 1\n"
    assert "line 1: import torch  ->  import buildingai as torch" in err
    assert "1 import statement(s) rewritten -> stdout" in err
    assert program.read_text() == "import torch\nx = 1\n"  # the input is never changed


def test_command_writes_to_output_and_never_over_the_input(tmp_path, capsys):
    program, ported = tmp_path / "train.py", tmp_path / "train_bai.py"
    program.write_text("from torch import nn\n")
    assert main(["port", str(program), "-o", str(ported)]) == 0
    assert ported.read_text() == "from buildingai import nn\n"
    assert "rewritten -> " + str(ported) in capsys.readouterr().out
    assert main(["port", str(program), "-o", str(program)]) == 2
    assert "would overwrite the program being ported" in capsys.readouterr().err
    assert program.read_text() == "from torch import nn\n"


@pytest.mark.parametrize(
    ("content", "message"),
    [(None, r"error: \[port\] no file at"), ("print 'py2'\n", r"is not valid Python 3")],
)
def test_command_errors_are_one_line(tmp_path, content, message):
    program = tmp_path / "old.py"
    if content is not None:
        program.write_text(content)
    done = subprocess.run([sys.executable, "-m", "buildingai", "port", str(program)],
                          capture_output=True, text=True)  # fmt: skip
    assert done.returncode == 2
    assert len(done.stderr.strip().splitlines()) == 1
    assert re.search(message, done.stderr)


def test_lines_are_counted_as_the_parser_counts_them():
    # a form feed inside a string is not a line end for Python (str.splitlines says it is)
    source = 'text = "page\x0cbreak"\r\nimport torch\r\nfrom torch import nn\r\n'
    ported, changes = rewrite_imports(source)
    assert (
        ported
        == 'text = "page\x0cbreak"\r\nimport buildingai as torch\r\nfrom buildingai import nn\r\n'
    )
    assert [change.line for change in changes] == [2, 3]
