"""The page at ``/`` in headless Chromium: draw a digit with the mouse (or upload a picture of
one), press Predict, and read the prediction, the three most likely classes and every class's
probability from the DOM. The drawing reaches the model framed as MNIST's digits are, and a CNN
trained on MNIST reads digits drawn with the mouse."""

import json

import numpy as np
import pytest

from buildingai.autograd.tensor import Tensor
from buildingai.serve import Server, create_app, load_model

from ..browser import browser_page
from .models import CNN_CONFIG, DIGITS, run_directly

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

WAIT_MS = 20_000


def softmax(scores: np.ndarray) -> np.ndarray:
    exps = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return exps / exps.sum(axis=-1, keepdims=True)


def open_server_page(page, url: str) -> list:
    """Load the page; returns the list that collects the bodies it posts to /predict."""
    posted: list = []
    page.on("request", lambda r: posted.append(r.post_data) if r.url.endswith("/predict") else None)
    page.goto(url + "/")
    page.wait_for_function("!document.getElementById('predict').disabled", timeout=WAIT_MS)
    return posted


def listed(page, selector: str) -> tuple[list[str], np.ndarray]:
    """The labels and probabilities of a list of classes on the page."""
    items = page.locator(f"{selector} li")
    labels = [items.nth(k).get_attribute("data-label") for k in range(items.count())]
    probabilities = [float(items.nth(k).get_attribute("data-probability")) for k in range(items.count())]  # fmt: skip
    return labels, np.array(probabilities)


def shown(page) -> tuple[str, list[str], np.ndarray]:
    """The prediction line, and the labels and probabilities of every class (under "All
    classes"); checks that the top three, shown first, are the three most likely."""
    page.wait_for_selector("#top li", timeout=WAIT_MS)
    labels, probabilities = listed(page, "#probabilities")
    top_labels, top_probabilities = listed(page, "#top")
    order = np.argsort(-probabilities, kind="stable")[:3]
    assert top_labels == [labels[k] for k in order]
    np.testing.assert_array_equal(top_probabilities, probabilities[order])
    assert page.locator("#top li").first.get_attribute("class") == "top"
    return page.inner_text("#prediction"), labels, probabilities


def check_against_the_model(model, posted: list, prediction: str, labels, probabilities, shape):
    assert len(posted) == 1
    inputs = np.array(json.loads(posted[0])["inputs"], np.float32)
    assert inputs.shape == (1, *shape)
    assert inputs.min() >= 0 and inputs.max() <= 1 and inputs.max() > 0.5  # ink on black
    expected = softmax(run_directly(model, inputs))[0]
    assert labels == DIGITS
    np.testing.assert_allclose(probabilities, expected, atol=2e-6)
    assert prediction == f"Prediction: {DIGITS[int(expected.argmax())]}"


@pytest.mark.browser
@pytest.mark.parametrize("kind, shape", [("mlp", (784,)), ("cnn", (1, 28, 28))])
@pytest.mark.slow
def test_draw_a_digit_and_see_the_prediction(kind, shape, mlp_checkpoint, cnn_checkpoint):
    path, model = mlp_checkpoint if kind == "mlp" else cnn_checkpoint
    with Server(create_app(load_model(path))) as server, browser_page() as page:
        posted = open_server_page(page, server.url)
        box = page.locator("#pad").bounding_box()
        x, y, size = box["x"], box["y"], box["width"]
        # a 7: a bar across the top, then a stroke down to the bottom left
        page.mouse.move(x + 0.25 * size, y + 0.2 * size)
        page.mouse.down()
        page.mouse.move(x + 0.75 * size, y + 0.2 * size, steps=12)
        page.mouse.move(x + 0.4 * size, y + 0.85 * size, steps=16)
        page.mouse.up()
        page.click("#predict")
        prediction, labels, probabilities = shown(page)
        check_against_the_model(model, posted, prediction, labels, probabilities, shape)
        assert page.locator("#probabilities li.top").count() == 1
        assert page.locator("#top li").count() == 3 and page.locator("#top li").first.is_visible()
        page.click("#clear")  # a new drawing starts from an empty answer
        assert page.locator("#top li").count() == 0 and page.inner_text("#prediction") == ""
        assert page.inner_text("#status") == ""
        assert page.console_errors == []


@pytest.mark.browser
def test_upload_a_picture_of_a_digit(tmp_path, mlp_checkpoint):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    from matplotlib import image

    picture = np.ones((60, 40))  # a dark 1 on white paper, as a photo of one would be
    picture[8:52, 17:24] = 0.05
    image.imsave(tmp_path / "one.png", picture, cmap="gray", vmin=0, vmax=1)
    path, model = mlp_checkpoint
    with Server(create_app(load_model(path))) as server, browser_page() as page:
        posted = open_server_page(page, server.url)
        page.set_input_files("#upload", str(tmp_path / "one.png"))
        prediction, labels, probabilities = shown(page)
        check_against_the_model(model, posted, prediction, labels, probabilities, (784,))
        inputs = np.array(json.loads(posted[0])["inputs"]).reshape(28, 28)
        assert inputs[0].max() == 0 and inputs[:, 0].max() == 0  # the paper became black
        assert page.console_errors == []


@pytest.mark.browser
def test_the_page_says_when_nothing_is_drawn(mlp_checkpoint):
    with Server(create_app(load_model(mlp_checkpoint[0]))) as server, browser_page() as page:
        posted = open_server_page(page, server.url)
        page.click("#predict")
        page.wait_for_function("document.getElementById('status').textContent !== ''",
                               timeout=WAIT_MS)  # fmt: skip
        assert page.inner_text("#status") == "Draw a digit first."
        assert posted == [] and page.console_errors == []


def draw(page, strokes, box=(0.0, 0.0, 1.0)) -> None:
    """Draw ``strokes`` (lists of (x, y) points in the unit square) with the mouse on the pad,
    inside the square at ``box`` = (left, top, size) given as fractions of the pad."""
    pad = page.locator("#pad").bounding_box()
    left, top, size = box

    def at(x, y):
        return (pad["x"] + (left + x * size) * pad["width"],
                pad["y"] + (top + y * size) * pad["height"])  # fmt: skip

    for stroke in strokes:
        page.mouse.move(*at(*stroke[0]))
        page.mouse.down()
        for point in stroke[1:]:
            page.mouse.move(*at(*point), steps=6)
        page.mouse.up()


def framed(posted: list) -> np.ndarray:
    """The (28, 28) image the page sent with its last request."""
    return np.array(json.loads(posted[-1])["inputs"], np.float64).reshape(28, 28)


@pytest.mark.browser
def test_a_small_digit_off_to_one_side_is_framed_as_mnist_digits_are(cnn_checkpoint):
    with Server(create_app(load_model(cnn_checkpoint[0]))) as server, browser_page() as page:
        posted = open_server_page(page, server.url)
        draw(page, DIGIT_STROKES["7"], box=(0.05, 0.05, 0.4))  # small, in the top left corner
        page.click("#predict")
        shown(page)
        image = framed(posted)
        rows, cols = np.nonzero(image > 0.1)
        # the ink's bounding box fills 20 pixels in its larger dimension ...
        assert max(rows.max() - rows.min(), cols.max() - cols.min()) + 1 in (19, 20, 21)
        # ... and its centre of mass sits on the image's centre (whole-pixel shifts)
        ys, xs = np.mgrid[0:28, 0:28] + 0.5
        centre = (image * ys).sum() / image.sum(), (image * xs).sum() / image.sum()
        np.testing.assert_allclose(centre, (14, 14), atol=0.75)
        assert page.console_errors == []


# Each digit as a hand draws it: strokes through points of the unit square, one list per stroke.
DIGIT_STROKES = {
    "0": [[(0.5, 0.15), (0.32, 0.25), (0.27, 0.5), (0.33, 0.76), (0.5, 0.85), (0.67, 0.76),
           (0.73, 0.5), (0.67, 0.24), (0.5, 0.15)]],
    "1": [[(0.48, 0.15), (0.5, 0.5), (0.52, 0.85)]],
    "2": [[(0.3, 0.3), (0.4, 0.18), (0.56, 0.15), (0.68, 0.24), (0.68, 0.38), (0.55, 0.55),
           (0.3, 0.82), (0.74, 0.82)]],
    "3": [[(0.3, 0.2), (0.5, 0.14), (0.66, 0.22), (0.64, 0.38), (0.46, 0.48), (0.66, 0.58),
           (0.7, 0.72), (0.56, 0.84), (0.3, 0.8)]],
    "4": [[(0.34, 0.15), (0.3, 0.55), (0.72, 0.55)], [(0.64, 0.18), (0.64, 0.86)]],
    "5": [[(0.7, 0.16), (0.36, 0.16), (0.32, 0.46), (0.52, 0.42), (0.68, 0.54), (0.68, 0.72),
           (0.54, 0.84), (0.3, 0.8)]],
    "6": [[(0.64, 0.15), (0.44, 0.3), (0.33, 0.55), (0.36, 0.78), (0.52, 0.86), (0.66, 0.76),
           (0.64, 0.58), (0.48, 0.52), (0.34, 0.62)]],
    "7": [[(0.26, 0.18), (0.74, 0.18), (0.42, 0.86)]],
    "8": [[(0.62, 0.22), (0.5, 0.15), (0.37, 0.22), (0.38, 0.38), (0.5, 0.48), (0.64, 0.6),
           (0.64, 0.78), (0.5, 0.86), (0.36, 0.78), (0.36, 0.6), (0.5, 0.48), (0.62, 0.38),
           (0.62, 0.22)]],
    "9": [[(0.64, 0.26), (0.5, 0.15), (0.36, 0.24), (0.36, 0.4), (0.5, 0.48), (0.64, 0.38),
           (0.64, 0.26), (0.63, 0.56), (0.6, 0.86)]],
}  # fmt: skip

# where each digit is drawn: most fill the pad, some are small or off to one side
PLACES = [(0.0, 0.0, 1.0), (0.1, 0.05, 0.8), (0.3, 0.3, 0.6), (0.0, 0.0, 1.0), (0.05, 0.35, 0.6),
          (0.0, 0.0, 1.0), (0.2, 0.0, 0.8), (0.0, 0.0, 1.0), (0.1, 0.1, 0.9), (0.35, 0.05, 0.6)]  # fmt: skip


@pytest.fixture(scope="module")
def trained_cnn(tmp_path_factory):
    """A checkpoint of a small CNN trained briefly on MNIST (about 97% on its test set), as
    `buildingai train` writes it; skips when MNIST is not on this machine already."""
    from buildingai import accel, optim
    from buildingai.data.datasets import MNIST
    from buildingai.nn import functional as F
    from buildingai.train import Trainer

    try:
        images = MNIST("train", download=False)
    except Exception as error:  # not cached here: the test does not download 10 MB
        pytest.skip(f"MNIST is not cached on this machine ({type(error).__name__})")
    config = dict(CNN_CONFIG, seed=0, model=dict(CNN_CONFIG["model"], channels=[8, 16], hidden=32))
    trainer = Trainer.from_config(config)
    model = trainer.model.train()
    optimizer = optim.Adam(model.parameters(), lr=3e-3)
    x = images.images.astype(np.float32)[:, None] / 255  # (N, 1, 28, 28) in [0, 1]
    rng = np.random.default_rng(0)
    with accel.enabled():
        for _ in range(TRAIN_STEPS):
            batch = rng.integers(0, len(x), 128)
            loss = F.cross_entropy(model(Tensor(x[batch])), Tensor(images.labels[batch]))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    path = tmp_path_factory.mktemp("serve") / "mnist_cnn.safetensors"
    trainer.save_checkpoint(path)
    return path


TRAIN_STEPS = 400


@pytest.mark.slow
@pytest.mark.browser
def test_a_cnn_trained_on_mnist_reads_digits_drawn_with_the_mouse(trained_cnn):
    read = {}
    with Server(create_app(load_model(trained_cnn))) as server, browser_page() as page:
        open_server_page(page, server.url)
        for digit, place in zip(DIGITS, PLACES):
            page.click("#clear")
            draw(page, DIGIT_STROKES[digit], box=place)
            page.click("#predict")
            prediction, labels, probabilities = shown(page)
            read[digit] = (prediction.removeprefix("Prediction: "), round(probabilities.max(), 3))
        assert page.console_errors == []
    right = [digit for digit, (answer, _) in read.items() if answer == digit]
    assert len(right) >= 9, read
