/**
 * Taking a result out of the sidebar: the scenario as TOML (what `%%hwsim` and `python -m jupyter_hwsim run` read),
 * the result as JSON, and a file download in the browser.
 */

import { nonDefaultFields } from './model';
import { ICatalog, IResult, Scenario, Value } from './types';

/** A TOML value: a basic string with escapes, an integer or float, a boolean. */
export function tomlValue(value: Value): string {
  if (typeof value === 'boolean') {
    return value ? 'true' : 'false';
  }
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) {
      throw new Error(`${value} has no TOML form`);
    }
    return String(value);
  }
  // eslint-disable-next-line no-control-regex -- control characters are what TOML needs escaped
  const escaped = value.replace(/[\\"\u0000-\u001f\u007f]/g, ch => {
    const named: { [c: string]: string } = { '\\': '\\\\', '"': '\\"', '\n': '\\n', '\t': '\\t', '\r': '\\r' };
    return named[ch] ?? `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`;
  });
  return `"${escaped}"`;
}

/** The scenario as a TOML document: the fields the user set that differ from the defaults, one per line. */
export function scenarioToToml(catalog: ICatalog, scenario: Scenario): string {
  const fields = nonDefaultFields(catalog, scenario);
  const lines = ['# a jupyter-hwsim scenario: %%hwsim cell body, or python -m jupyter_hwsim run scenario.toml'];
  for (const [name, value] of Object.entries(fields)) {
    const key = /^[A-Za-z0-9_-]+$/.test(name) ? name : tomlValue(name);
    lines.push(`${key} = ${tomlValue(value)}`);
  }
  return lines.join('\n') + '\n';
}

/** The result as the REST API gave it, without the charts' specs (their data is the result's). */
export function resultJson(result: IResult): string {
  const { charts, ...rest } = result; // eslint-disable-line @typescript-eslint/no-unused-vars
  return JSON.stringify(rest, null, 2) + '\n';
}

/** Save `data` (text, or a data: URL when `mime` is null) as a file named `name`. */
export function download(name: string, data: string, mime: string | null): void {
  const url = mime === null ? data : URL.createObjectURL(new Blob([data], { type: mime }));
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  a.style.display = 'none';
  document.body.append(a);
  a.click();
  a.remove();
  if (mime !== null) {
    setTimeout(() => URL.revokeObjectURL(url), 1000);
  }
}
