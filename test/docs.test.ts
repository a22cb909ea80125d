// The documentation against the code: docs/configuration.md documents exactly the environment the
// gateway reads (the keys of EnvSchema in src/config.ts, each vendor's key and URL, and the few other
// variables src/ reads), with the schema's defaults; and no relative link in README.md, docs/*.md or
// deploy/README.md points at a file that does not exist (or, for a Markdown file, at a heading it does
// not have). Each check is a function returning problems as sentences, also run on broken copies to
// show it catches what it should.
import t from 'tap';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { EnvSchema, VENDORS, loadConfig } from '../src/config.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url)); // dist/test/ -> the repository
const CONFIGURATION_PAGE = join(ROOT, 'docs', 'configuration.md');

/** Defaults that depend on the machine (cores, temporary directory): the page describes them in words. */
const MACHINE_DEPENDENT_DEFAULTS = new Set(['HTTP_THREADS', 'SETTLE_JOURNAL_DIR']);
/** Folders of src/ that are not the gateway's own settings (the standalone mock vendor documents its own). */
const OTHER_PROGRAMS = [join('src', 'mock-vendor')];

// ---------------------------------------------------------------------------------------------------
// Markdown helpers

/** The text with fenced code blocks blanked (spaces in place of their characters, so offsets and line numbers still hold). */
export function withoutCodeBlocks(markdown: string): string {
  const lines = markdown.split('\n');
  let fence: string | undefined;
  return lines.map((line) => {
    const opener = /^\s{0,3}(`{3,}|~{3,})/.exec(line);
    if (fence === undefined) {
      if (opener) {
        fence = opener[1]!;
        return ' '.repeat(line.length);
      }
      return line;
    }
    if (opener && opener[1]![0] === fence[0] && opener[1]!.length >= fence.length && line.trim() === opener[1]) fence = undefined;
    return ' '.repeat(line.length);
  }).join('\n');
}

/** Inline code spans replaced by as many spaces (so `[x](y)` written as code is no link). */
function withoutCodeSpans(text: string): string {
  return text.replace(/(`+)(?:(?!\1)[\s\S])+?\1/g, (span) => span.replace(/[^\n]/g, ' '));
}

/** A table row's cells, `|` inside code spans or escaped not splitting. */
export function tableCells(line: string): string[] {
  const cells: string[] = [];
  let current = '';
  let tick = 0;
  const body = line.trim().replace(/^\|/, '').replace(/\|$/, '');
  for (let i = 0; i < body.length; i++) {
    const char = body[i]!;
    if (char === '\\' && body[i + 1] === '|') {
      current += '|';
      i++;
    } else if (char === '`') {
      let run = 1;
      while (body[i + run] === '`') run++;
      tick = tick === 0 ? run : tick === run ? 0 : tick;
      current += '`'.repeat(run);
      i += run - 1;
    } else if (char === '|' && tick === 0) {
      cells.push(current.trim());
      current = '';
    } else {
      current += char;
    }
  }
  cells.push(current.trim());
  return cells;
}

export interface Table {
  readonly header: string[];
  readonly rows: { readonly cells: string[]; readonly line: number }[];
}

/** Every pipe table of a Markdown text (outside code blocks). */
export function markdownTables(markdown: string): Table[] {
  const lines = withoutCodeBlocks(markdown).split('\n');
  const tables: Table[] = [];
  for (let i = 0; i + 1 < lines.length; i++) {
    if (!lines[i]!.trim().startsWith('|') || !/^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$/.test(lines[i + 1]!)) continue;
    const table: Table = { header: tableCells(lines[i]!).map((cell) => cell.toLowerCase()), rows: [] };
    let j = i + 2;
    for (; j < lines.length && lines[j]!.trim().startsWith('|'); j++) table.rows.push({ cells: tableCells(lines[j]!), line: j + 1 });
    tables.push(table);
    i = j - 1;
  }
  return tables;
}

/** The environment-variable names written as code in a cell: `PORT`, `OPENAI_API_KEY`. */
function variablesIn(cell: string): string[] {
  return [...cell.matchAll(/`([A-Z][A-Z0-9_]*)`/g)].map((match) => match[1]!);
}

// ---------------------------------------------------------------------------------------------------
// docs/configuration.md against the schema

export interface KnownEnvironment {
  /** The schema's keys and their defaults (undefined: none). */
  readonly schema: ReadonlyMap<string, string | undefined>;
  /** `<VENDOR>_API_KEY` and `<VENDOR>_BASE_URL`, with the real base URL a key alone selects. */
  readonly vendors: ReadonlyMap<string, { readonly variables: readonly [string, string]; readonly realBaseUrl: string }>;
  /** Other variables the gateway's code reads directly (`process.env.GATEWAY_COMMIT`). */
  readonly direct: ReadonlySet<string>;
}

function tsFiles(folder: string): string[] {
  if (!existsSync(folder)) return [];
  return readdirSync(folder, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts'))
    .map((entry) => join(entry.parentPath, entry.name));
}

/** What the gateway reads: the schema (and its defaults), the vendors, and direct `process.env` reads in src/. */
export function knownEnvironment(): KnownEnvironment {
  const schema = new Map<string, string | undefined>();
  for (const [name, entry] of Object.entries(EnvSchema.entries)) {
    const fallback = (entry as { default?: unknown }).default;
    schema.set(name, typeof fallback === 'string' ? fallback : fallback === undefined ? undefined : String(fallback));
  }
  const vendors = new Map<string, { variables: readonly [string, string]; realBaseUrl: string }>();
  for (const vendor of VENDORS) {
    const upper = vendor.toUpperCase();
    // A key in the form every vendor takes (Kling's is `<access key>:<secret key>`).
    const realBaseUrl = loadConfig({ [`${upper}_API_KEY`]: 'docs-test:docs-test' }).vendors[vendor].baseUrl;
    vendors.set(vendor, { variables: [`${upper}_API_KEY`, `${upper}_BASE_URL`], realBaseUrl });
  }
  const direct = new Set<string>();
  const skipped = OTHER_PROGRAMS.map((folder) => join(ROOT, folder) + sep);
  for (const file of tsFiles(join(ROOT, 'src'))) {
    if (skipped.some((folder) => file.startsWith(folder))) continue;
    const source = readFileSync(file, 'utf8');
    for (const match of source.matchAll(/process\.env(?:\.([A-Z][A-Z0-9_]*)|\[\s*['"]([A-Z][A-Z0-9_]*)['"]\s*\])/g)) {
      const name = match[1] ?? match[2]!;
      if (!schema.has(name)) direct.add(name);
    }
  }
  return { schema, vendors, direct };
}

/**
 * Problems of the configuration page: a variable the gateway reads that no table documents (in a table
 * with a `default` column), a documented variable it does not read, a schema default the row does not
 * show as code, a vendor row without the vendor's real base URL.
 */
export function configurationProblems(markdown: string, known: KnownEnvironment): string[] {
  const problems: string[] = [];
  const vendorVariables = new Set([...known.vendors.values()].flatMap((vendor) => vendor.variables));
  const isKnown = (name: string) => known.schema.has(name) || vendorVariables.has(name) || known.direct.has(name);
  const documented = new Map<string, { cells: string[]; defaultCell: string | undefined; line: number }>();
  for (const table of markdownTables(markdown)) {
    if (table.header[0] !== 'variable') continue;
    const defaultColumn = table.header.indexOf('default');
    for (const row of table.rows) {
      for (const name of variablesIn(row.cells[0] ?? '')) {
        if (!isKnown(name)) {
          problems.push(`line ${row.line}: documents ${name}, which the gateway does not read (not in src/config.ts's EnvSchema, no vendor's, not read in src/)`);
          continue;
        }
        if (defaultColumn >= 0 && !documented.has(name)) documented.set(name, { cells: row.cells, defaultCell: row.cells[defaultColumn], line: row.line });
      }
    }
  }
  const required = [...known.schema.keys(), ...vendorVariables, ...known.direct];
  for (const name of required) {
    if (!documented.has(name)) problems.push(`${name} is read by the gateway but no table with a "default" column documents it`);
  }
  for (const [name, fallback] of known.schema) {
    const row = documented.get(name);
    if (!row || fallback === undefined || fallback === '' || MACHINE_DEPENDENT_DEFAULTS.has(name)) continue;
    if (!(row.defaultCell ?? '').includes(`\`${fallback}\``)) {
      problems.push(`line ${row.line}: ${name}'s default is \`${fallback}\` in src/config.ts, but its row's default reads "${row.defaultCell ?? ''}"`);
    }
  }
  for (const [vendor, { variables, realBaseUrl }] of known.vendors) {
    const row = documented.get(variables[0]);
    if (row && !row.cells.join(' | ').includes(`\`${realBaseUrl}\``)) {
      problems.push(`line ${row.line}: ${vendor}'s real base URL is \`${realBaseUrl}\` in src/config.ts, but its row does not name it`);
    }
  }
  return problems;
}

// ---------------------------------------------------------------------------------------------------
// Relative links

export interface Link {
  readonly line: number;
  readonly text: string;
  readonly target: string;
}

/** Inline links and images (`[text](target)`, `![alt](target "title")`) and reference definitions (`[id]: target`), outside code. */
export function markdownLinks(markdown: string): Link[] {
  const text = withoutCodeSpans(withoutCodeBlocks(markdown));
  const lineAt = (index: number) => text.slice(0, index).split('\n').length;
  const links: Link[] = [];
  for (const match of text.matchAll(/!?\[((?:[^\[\]]|\[[^\[\]]*\])*)\]\(\s*(<[^>\n]*>|[^\s()]*(?:\([^\s()]*\)[^\s()]*)*)(?:\s+(?:"[^"]*"|'[^']*'|\([^)]*\)))?\s*\)/g)) {
    // The text as written (code spans were blanked in place, so the same offsets hold).
    const written = markdown.slice(match.index! + match[0].indexOf('[') + 1, match.index! + match[0].indexOf('[') + 1 + match[1]!.length);
    links.push({ line: lineAt(match.index!), text: written.replace(/\s+/g, ' ').trim(), target: match[2]!.replace(/^<|>$/g, '') });
  }
  for (const match of text.matchAll(/^ {0,3}\[([^\]\n]+)\]:\s*(<[^>\n]*>|\S+)/gm)) {
    links.push({ line: lineAt(match.index!), text: match[1]!, target: match[2]!.replace(/^<|>$/g, '') });
  }
  return links;
}

/** GitHub's anchor for a heading's text (github-slugger): lower case, punctuation dropped, spaces to hyphens. */
export function headingSlug(heading: string): string {
  const plain = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1') // links and images: their text
    .replace(/<[^>]+>/g, '') // inline HTML tags
    .replace(/`/g, '')
    .replace(/(\*\*|__)(.+?)\1/g, '$2')
    .replace(/(^|\W)[*_](.+?)[*_](?=\W|$)/g, '$1$2');
  return plain.trim().toLowerCase().replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '').replace(/ /g, '-');
}

/** The anchors a Markdown file offers: its headings' slugs (repeats numbered `-1`, `-2`, …) and explicit `id`/`name` anchors. */
export function markdownAnchors(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  const add = (heading: string) => {
    const slug = headingSlug(heading);
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    anchors.add(count === 0 ? slug : `${slug}-${count}`);
  };
  const lines = withoutCodeBlocks(markdown).split('\n');
  lines.forEach((line, index) => {
    const atx = /^ {0,3}#{1,6}\s+(.*?)(?:\s+#+)?\s*$/.exec(line);
    if (atx) return add(atx[1]!);
    const previous = lines[index - 1];
    if (previous !== undefined && previous.trim() !== '' && !/^\s*[|>#-]/.test(previous) && /^ {0,3}(=+|-+)\s*$/.test(line)) add(previous.trim());
  });
  for (const match of markdown.matchAll(/<a\s[^>]*\b(?:id|name)\s*=\s*["']([^"']+)["']/gi)) anchors.add(match[1]!);
  return anchors;
}

/** Problems of one Markdown file's relative links: `kind` "files" (targets that do not exist) or "anchors" (`#anchor`s of .md targets no heading gives). */
export function linkProblems(file: string, markdown: string, kind: 'files' | 'anchors', readTarget: (path: string) => string | undefined = readIfExists): string[] {
  const problems: string[] = [];
  const where = relative(ROOT, file) || file;
  for (const link of markdownLinks(markdown)) {
    const target = link.target.trim();
    if (target === '' || /^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith('//')) continue; // http(s), mailto, …
    const hash = target.indexOf('#');
    const pathPart = (hash < 0 ? target : target.slice(0, hash)).replace(/\?.*$/, '');
    const anchor = hash < 0 ? undefined : target.slice(hash + 1);
    let decoded: string;
    try {
      decoded = decodeURIComponent(pathPart);
    } catch {
      problems.push(`${where}:${link.line}: [${link.text}](${target}): the path is not valid percent-encoding`);
      continue;
    }
    const resolved = decoded === '' ? file : decoded.startsWith('/') ? join(ROOT, decoded) : resolve(dirname(file), decoded);
    if (kind === 'files') {
      if (decoded === '') continue; // a link within the page: an anchor only
      if (relative(ROOT, resolved).startsWith('..')) problems.push(`${where}:${link.line}: [${link.text}](${target}): points outside the repository`);
      else if (!existsSync(resolved)) problems.push(`${where}:${link.line}: [${link.text}](${target}): ${relative(ROOT, resolved)} does not exist`);
      continue;
    }
    if (anchor === undefined || anchor === '' || !resolved.endsWith('.md')) continue;
    const text = resolved === file ? markdown : readTarget(resolved);
    if (text === undefined) continue; // a missing file is the other check's finding
    let wanted: string;
    try {
      wanted = decodeURIComponent(anchor).toLowerCase();
    } catch {
      wanted = anchor.toLowerCase();
    }
    const anchors = markdownAnchors(text);
    if (![...anchors].some((a) => a.toLowerCase() === wanted)) {
      problems.push(`${where}:${link.line}: [${link.text}](${target}): ${relative(ROOT, resolved)} has no heading #${anchor}`);
    }
  }
  return problems;
}

function readIfExists(path: string): string | undefined {
  return existsSync(path) ? readFileSync(path, 'utf8') : undefined;
}

/** README.md, every docs/*.md and deploy/README.md. */
function documentationFiles(): string[] {
  const docs = join(ROOT, 'docs');
  const pages = existsSync(docs) ? readdirSync(docs).filter((name) => name.endsWith('.md')).sort().map((name) => join(docs, name)) : [];
  return [join(ROOT, 'README.md'), ...pages, join(ROOT, 'deploy', 'README.md')].filter((file) => existsSync(file));
}

// ---------------------------------------------------------------------------------------------------

t.test('docs/configuration.md documents exactly the environment src/config.ts reads, with its defaults', async (t) => {
  t.ok(existsSync(CONFIGURATION_PAGE), 'docs/configuration.md exists');
  const known = knownEnvironment();
  t.ok(known.schema.size > 40, `the schema's keys were read (${known.schema.size})`);
  t.ok(known.schema.has('REDIS_URL') && known.schema.get('PORT') === '8080', 'keys and defaults come from EnvSchema');
  const problems = configurationProblems(readFileSync(CONFIGURATION_PAGE, 'utf8'), known);
  for (const problem of problems) t.fail(`docs/configuration.md: ${problem}`);
  if (problems.length === 0) t.pass(`all ${known.schema.size} schema variables, ${known.vendors.size * 2} vendor variables and ${known.direct.size} others are documented, none more`);
});

t.test('the configuration check catches a missing variable, an unknown one, a wrong default and a wrong vendor URL', async (t) => {
  const known = knownEnvironment();
  const page = readFileSync(CONFIGURATION_PAGE, 'utf8');
  const caught = (what: string, broken: string, pattern: RegExp) => {
    t.not(broken, page, `${what}: the copy differs`);
    t.match(configurationProblems(broken, known).join('\n'), pattern, what);
  };
  caught('a row removed', page.replace(/^\| `LEDGER_IDLE_POLL_MS` \|.*\n/m, ''), /LEDGER_IDLE_POLL_MS is read by the gateway but no table/);
  caught('an unknown variable', page.replace(/^(\| `LOG_LEVEL` \|.*\n)/m, '$1| `LOG_FORMAT` | `json` | any | made up |\n'), /documents LOG_FORMAT, which the gateway does not read/);
  caught('a wrong default', page.replace(/^\| `SETTLE_FLUSH_MS` \| `20` \|/m, '| `SETTLE_FLUSH_MS` | `25` |'), /SETTLE_FLUSH_MS's default is `20`/);
  caught('a wrong vendor URL', page.replace('`https://api.openai.com/v1`', '`https://api.openai.com/v2`'), /openai's real base URL/);
  t.same(configurationProblems('| variable | default |\n|---|---|\n', { schema: new Map([['A_B', '1']]), vendors: new Map(), direct: new Set() }),
    ['A_B is read by the gateway but no table with a "default" column documents it'], 'an empty table documents nothing');
});

t.test('relative links in README.md, docs/*.md and deploy/README.md point at files that exist', async (t) => {
  const files = documentationFiles();
  t.ok(files.length >= 2, `${files.length} files checked: ${files.map((file) => relative(ROOT, file)).join(', ')}`);
  let broken = 0;
  for (const file of files) {
    for (const problem of linkProblems(file, readFileSync(file, 'utf8'), 'files')) {
      broken++;
      t.fail(problem);
    }
  }
  if (broken === 0) t.pass('every relative link resolves');
});

t.test('anchors of links to Markdown files name one of their headings', async (t) => {
  let broken = 0;
  for (const file of documentationFiles()) {
    for (const problem of linkProblems(file, readFileSync(file, 'utf8'), 'anchors')) {
      broken++;
      t.fail(problem);
    }
  }
  if (broken === 0) t.pass('every anchor names a heading');
});

t.test('the link checks: what counts as a link, a slug, a broken target', async (t) => {
  const page = join(ROOT, 'docs', 'example.md');
  const text = [
    '# Example page',
    'See [operations](operations.md#logs), [the code](../src/config.ts), [a site](https://example.com/x.md),',
    '[mail](mailto:a@example.com), [here](#example-page), [there](#nowhere) and ![an image](img/missing.png "title").',
    '`[not a link](nowhere.md)`',
    '```',
    '[not a link either](nowhere.md)',
    '```',
    '[spread',
    'over lines](missing.md)',
    '[ref]: ./ghost.md',
    '## The ops command line (`gateway`, the package\'s bin; `npx gateway …`)',
    '## Repeat',
    '## Repeat',
  ].join('\n');
  t.same(markdownLinks(text).map((link) => link.target),
    ['operations.md#logs', '../src/config.ts', 'https://example.com/x.md', 'mailto:a@example.com', '#example-page', '#nowhere', 'img/missing.png', 'missing.md', './ghost.md']);
  t.same(linkProblems(page, text, 'files', () => undefined).map((problem) => problem.replace(/^.*?: \[/, '[')), [
    ...(existsSync(join(ROOT, 'docs', 'operations.md')) ? [] : ['[operations](operations.md#logs): docs/operations.md does not exist']),
    '[an image](img/missing.png): docs/img/missing.png does not exist',
    '[spread over lines](missing.md): docs/missing.md does not exist',
    '[ref](./ghost.md): docs/ghost.md does not exist',
  ], 'missing files are found, external links and code are not links');
  t.same(linkProblems(page, text, 'anchors', () => '## Logs\n').map((problem) => problem.replace(/^.*?: \[/, '[')),
    ['[there](#nowhere): docs/example.md has no heading #nowhere'], 'anchors are checked against the target\'s headings');
  t.equal(headingSlug('The ops command line (`gateway`, the package\'s bin; `npx gateway …`)'), 'the-ops-command-line-gateway-the-packages-bin-npx-gateway-');
  t.equal(headingSlug('Prompt caching, per end user'), 'prompt-caching-per-end-user');
  t.equal(headingSlug('Responses-style endpoint (`POST /v1/responses`)'), 'responses-style-endpoint-post-v1responses');
  t.equal(headingSlug('BYOK **credentials** and [links](x.md)'), 'byok-credentials-and-links');
  t.ok(markdownAnchors(text).has('repeat-1'), 'a repeated heading gets -1');
  t.ok(linkProblems(join(ROOT, 'README.md'), '[x](../../outside.md)', 'files')[0]?.endsWith('points outside the repository'));
});
