/** Small DOM helpers shared by the sidebar's views. */

/** A new element with a class (none if '') and, if given, its text. */
export function el(tag: string, className: string, text?: string): HTMLElement {
  const node = document.createElement(tag);
  if (className) {
    node.className = className;
  }
  if (text !== undefined) {
    node.textContent = text;
  }
  return node;
}

/** A read-out row: a label, then the value. */
export function labelled(label: string, value: HTMLElement): HTMLElement {
  const row = el('div', 'jp-hwsim-readrow');
  row.append(el('span', 'jp-hwsim-readlabel', label), value);
  return row;
}
