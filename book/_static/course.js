// A display formula wider than its column wraps only at its spaces (\quad, \;), never inside a
// term (issue 33: nothing scrolls sideways at 1280 px). course.css lets a formula wrap; this puts
// each stretch between two spaces in a box that does not. A formula that fits looks the same.
addEventListener("load", () => {
  const group = () => document.querySelectorAll('mjx-container[display="true"] > mjx-math').forEach(math => {
    const only = math.children.length === 1 ? math.firstElementChild : null;
    const row = only && only.tagName === "MJX-MROW" ? only : math;
    let term = null;
    for (const atom of Array.from(row.children)) {
      if (!atom.querySelector("mjx-c")) { term = null; continue; }   // no glyph: a space, a place to break
      if (!term) { term = document.createElement("span"); term.className = "formula-term"; row.insertBefore(term, atom); }
      term.appendChild(atom);
    }
  });
  // MathJax typesets after the page's load; wait until every formula is typeset (at most 30 s)
  const typeset = () => Array.from(document.querySelectorAll(".math")).every(e => e.querySelector("mjx-container"));
  let tries = 0;
  const wait = () => typeset() ? group() : ++tries < 300 && setTimeout(wait, 100);
  wait();
});
