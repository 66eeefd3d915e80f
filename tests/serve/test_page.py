"""The page at ``/`` in headless Chromium: draw a digit with the mouse (or upload a picture of
one), press Predict, and read the prediction and its probabilities from the DOM."""

import json

import numpy as np
import pytest

from buildingai.serve import Server, create_app, load_model

from ..browser import browser_page
from .models import DIGITS, run_directly

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


def shown(page) -> tuple[str, list[str], np.ndarray]:
    """The prediction line, the labels and the probabilities the page lists."""
    page.wait_for_selector("#probabilities li", timeout=WAIT_MS)
    items = page.locator("#probabilities li")
    labels = [items.nth(k).get_attribute("data-label") for k in range(items.count())]
    probabilities = [float(items.nth(k).get_attribute("data-probability")) for k in range(items.count())]  # fmt: skip
    return page.inner_text("#prediction"), labels, np.array(probabilities)


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
