"""Whether a Plotly figure drawn in the browser is legible: no axis label or subplot title lies on
another subplot's plot area or on another subplot's labels.

Labels of one subplot are not compared with each other: Plotly places them itself, and a
rotated tick label's box (axis-aligned) meets its neighbour's box without the texts touching.
"""

from __future__ import annotations

# Each text of an axis (tick labels: g.xtick, g.y2tick, ...; titles: g.g-xtitle, g.g-y2title, ...)
# and each subplot title (an annotation) with the subplot it belongs to, and the plot areas.
_BOXES = """plot => {
  const box = (node) => { const r = node.getBoundingClientRect();
                          return {left: r.left, right: r.right, top: r.top, bottom: r.bottom}; };
  const labels = [];
  for (const text of plot.querySelectorAll('text')) {
    const kind = text.parentNode.getAttribute('class') || '';
    const axis = kind.match(/^(?:g-)?[xy](\\d*)(?:tick|title)$/);
    if (axis) labels.push({owner: 'subplot ' + (axis[1] || '1'), text: text.textContent, box: box(text)});
  }
  plot.querySelectorAll('.annotation-text').forEach((text, k) =>
    labels.push({owner: 'title ' + k, text: text.textContent, box: box(text)}));
  const areas = [...plot.querySelectorAll('.nsewdrag')].map(box);
  return {labels, areas};
}"""


def _meet(a: dict, b: dict) -> bool:
    return a["left"] < b["right"] and b["left"] < a["right"] and a["top"] < b["bottom"] and b["top"] < a["bottom"]


def overlapping_labels(plot) -> list[str]:
    """The overlaps in the drawn plot (a Playwright locator of its .js-plotly-plot), described."""
    drawn = plot.evaluate(_BOXES)
    labels, areas = drawn["labels"], drawn["areas"]
    found = [f"{label['owner']} '{label['text']}' lies on plot area {k + 1}"
             for label in labels for k, area in enumerate(areas) if _meet(label["box"], area)]
    for i, a in enumerate(labels):
        for b in labels[i + 1:]:
            if a["owner"] != b["owner"] and _meet(a["box"], b["box"]):
                found.append(f"{a['owner']} '{a['text']}' meets {b['owner']} '{b['text']}'")
    return found
