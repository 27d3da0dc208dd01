// What a participant or an annotator sees once they withdrew, on every page that lets them: the
// study's withdrawn code and its return link, where the study has them (the server's answer:
// studies/withdrawal_api.py, annotation/api.py). The page has #withdrawn-code(-line),
// #withdrawn-return and #withdrawn-link.
function fillWithdrawn(answer) {
  document.getElementById("withdrawn-code").textContent = answer.withdrawn_code || "";
  document.getElementById("withdrawn-code-line").hidden = !answer.withdrawn_code;
  document.getElementById("withdrawn-return").hidden = !answer.withdrawn_url;
  if (answer.withdrawn_url) document.getElementById("withdrawn-link").href = answer.withdrawn_url;
}
