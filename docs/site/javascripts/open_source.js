// The engine and learning-path pages are about the source they quote: show it opened.
if (/\/(engine|learning_path)\//.test(location.pathname)) {
  document.querySelectorAll("article .doc details").forEach((details) => {
    details.open = true;
  });
}
