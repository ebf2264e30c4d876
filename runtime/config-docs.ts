// The configuration reference written from the settings table (core/config.ts): the
// tables of docs/configuration.md and the README's table of the most used settings.
// `node --import tsx runtime/config-docs.ts` rewrites them; a test checks they are current.

import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { SETTINGS, type Setting, type SettingSection } from '../core/config.ts';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
export const CONFIG_DOC = `${ROOT}docs/configuration.md`;
export const README = `${ROOT}README.md`;

function number(value: number): string {
  if (value === 2 ** 31 - 8) return '2^31−8';
  if (value >= 1 << 20 && (value & (value - 1)) === 0) return `2^${Math.log2(value)}`;
  return String(value);
}

function defaultOf(setting: Setting): string {
  if (setting.defaultText !== undefined) return setting.defaultText;
  if (setting.fallback === 'cores') return '`os.availableParallelism()`';
  if (typeof setting.fallback === 'number') return String(setting.fallback);
  if (setting.fallback === '') return 'unset';
  return `\`${String(setting.fallback)}\``;
}

function rangeOf(setting: Setting): string {
  const parts: string[] = [];
  switch (setting.kind) {
    case 'flag':
      parts.push('`true`/`false`');
      break;
    case 'choice':
      parts.push(setting.choices!.map((choice) => `\`${choice}\``).join(', '));
      break;
    case 'pattern':
      parts.push('`[A-Za-z0-9._:-]{1,64}`');
      break;
    case 'power-of-two':
      parts.push(`power of two, ${number(setting.min!)}–${number(setting.max!)}`);
      break;
    case 'integer':
      parts.push(`${number(setting.min!)}–${number(setting.max!)}`);
      break;
    case 'text':
      break;
  }
  if (setting.rangeNote !== undefined) parts.push(setting.rangeNote);
  return parts.join(', ');
}

const cell = (text: string): string => (text === '' ? ' ' : ` ${text} `);

/** The reference table of one section of docs/configuration.md. */
export function sectionTable(section: SettingSection): string {
  const rows = SETTINGS.filter((setting) => setting.section === section).map(
    (setting) => `|${cell(`\`${setting.env}\``)}|${cell(defaultOf(setting))}|${cell(rangeOf(setting))}|${cell(setting.meaning)}|`,
  );
  return ['| variable | default | range | meaning |', '|---|---|---|---|', ...rows].join('\n');
}

/** The README's table: the settings with a brief line. */
export function readmeTable(): string {
  const rows = SETTINGS.filter((setting) => setting.brief !== undefined).map((setting) => `| \`${setting.env}\` | ${defaultOf(setting)} | ${setting.brief} |`);
  return ['| variable | default | meaning |', '|---|---|---|', ...rows].join('\n');
}

/** `text` with the block between `<!-- config:NAME:start -->` and its end marker replaced by `table`. */
export function withTable(text: string, name: string, table: string): string {
  const start = `<!-- config:${name}:start -->`;
  const end = `<!-- config:${name}:end -->`;
  const from = text.indexOf(start);
  const to = text.indexOf(end);
  if (from < 0 || to < from) throw new Error(`no ${start} … ${end} block`);
  return `${text.slice(0, from + start.length)}\n${table}\n${text.slice(to)}`;
}

const SECTIONS: readonly SettingSection[] = ['listening', 'storage', 'bounds', 'market-data-loop'];

/** docs/configuration.md and README.md as the settings table writes them. */
export function currentDocs(): { configDoc: string; readme: string } {
  let configDoc = readFileSync(CONFIG_DOC, 'utf8');
  for (const section of SECTIONS) configDoc = withTable(configDoc, section, sectionTable(section));
  const readme = withTable(readFileSync(README, 'utf8'), 'readme', readmeTable());
  return { configDoc, readme };
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  const { configDoc, readme } = currentDocs();
  writeFileSync(CONFIG_DOC, configDoc);
  writeFileSync(README, readme);
}
