/**
 * The scenario <-> `%hwsim run key=value ...` line conversion (values as jupyter_hwsim.cli.parse_value reads them).
 */

import { nonDefaultFields } from './model';
import { ICatalog, Scenario, Value } from './types';

/** One value as the magic's parse_value reads it back (shlex-quoted when it is not a plain word). */
export function formatValue(value: Value): string {
  if (typeof value === 'boolean') {
    return value ? 'true' : 'false';
  }
  if (typeof value === 'number') {
    // String() gives the shortest text that reads back as the same double in Python
    return String(value);
  }
  return /^[A-Za-z0-9_.+\-/:@]+$/.test(value) ? value : `'${value.replace(/'/g, `'"'"'`)}'`;
}

/** `%hwsim run key=value ...` for the fields the user set (those equal to the defaults left out). */
export function scenarioToLine(catalog: ICatalog, scenario: Scenario, command = 'run'): string {
  const pairs = Object.entries(nonDefaultFields(catalog, scenario)).map(([k, v]) => `${k}=${formatValue(v)}`);
  return ['%hwsim', command, ...pairs].join(' ');
}

/** A value as jupyter_hwsim.cli.parse_value reads it: true/false, an int, a float, else the text. */
export function parseValue(text: string): Value {
  const low = text.trim().toLowerCase();
  if (low === 'true' || low === 'false') {
    return low === 'true';
  }
  if (/^\s*[+-]?\d+\s*$/.test(text)) {
    return parseInt(text, 10);
  }
  if (/^\s*[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?\s*$/i.test(text)) {
    return parseFloat(text);
  }
  return text;
}

/** Split a line the way Python's shlex.split does for the quoting formatValue writes ('...' and "..."). */
export function splitWords(line: string): string[] {
  const words: string[] = [];
  let word = '';
  let inWord = false;
  let quote: string | null = null;
  for (const ch of line) {
    if (quote) {
      if (ch === quote) {
        quote = null;
      } else {
        word += ch;
      }
    } else if (ch === "'" || ch === '"') {
      quote = ch;
      inWord = true;
    } else if (/\s/.test(ch)) {
      if (inWord) {
        words.push(word);
      }
      word = '';
      inWord = false;
    } else {
      word += ch;
      inWord = true;
    }
  }
  if (quote) {
    throw new Error(`unclosed quotation in ${line}`);
  }
  if (inWord) {
    words.push(word);
  }
  return words;
}

/** The scenario of a `%hwsim [run|estimate] key=value ...` line. */
export function lineToScenario(line: string): Scenario {
  const words = splitWords(line.trim());
  if (words[0] === '%hwsim') {
    words.shift();
  }
  if (['run', 'estimate'].includes(words[0])) {
    words.shift();
  }
  const out: Scenario = {};
  for (const word of words) {
    const eq = word.indexOf('=');
    if (eq < 0) {
      throw new Error(`${word} is not key=value`);
    }
    out[word.slice(0, eq).trim()] = parseValue(word.slice(eq + 1));
  }
  return out;
}

const LOAD_EXT = /^\s*%load_ext\s+jupyter_hwsim\s*$/m;

/** The cell to insert: the line, preceded by `%load_ext jupyter_hwsim` when no cell of the notebook loads it. */
export function cellSource(line: string, notebookSources: string[]): string {
  const loaded = notebookSources.some(src => LOAD_EXT.test(src));
  return loaded ? line : `%load_ext jupyter_hwsim\n${line}`;
}
