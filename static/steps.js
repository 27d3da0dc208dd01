// The step indicator shared by the call page and the trial page: `steps` is a list of
// [key, label]; steps before index `at` are marked done, the one at `at` is the current step
// (aria-current, so screen readers announce it).
function renderStepList(list, steps, at) {
  list.innerHTML = "";
  steps.forEach(([key, label], i) => {
    const li = document.createElement("li");
    li.textContent = label;
    if (i < at) li.className = "done";
    if (i === at) li.setAttribute("aria-current", "step");
    list.appendChild(li);
  });
}
