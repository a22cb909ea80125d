// The module graph of the sources: no import cycle (type-only imports included: a cycle of types
// still ties two modules together), and the product (src/, workers/) imports nothing from bench/ or
// test/. Read from the TypeScript sources, so it needs no build tool of its own.
import t from 'tap';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

const ROOT = resolve(new URL('../..', import.meta.url).pathname);
const FOLDERS = ['src', 'workers', 'bench', 'test', 'scripts'];
const PRODUCT = ['src', 'workers'];

function sources(folder: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(folder)) {
    const path = join(folder, entry);
    if (statSync(path).isDirectory()) out.push(...sources(path));
    else if (path.endsWith('.ts') && !path.endsWith('.d.ts')) out.push(path);
  }
  return out;
}

// `import … from '…'`, `export … from '…'`, `import '…'` and `import('…')` with a literal path.
const SPECIFIERS = /(?:^|[\s;])(?:import|export)\s[^'";]*?from\s*['"]([^'"]+)['"]|(?:^|[\s;])import\s*['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/gm;

/** The project files `file` imports (relative specifiers only; packages are not part of the graph). */
function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8').replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');
  const found: string[] = [];
  for (const match of text.matchAll(SPECIFIERS)) {
    const specifier = match[1] ?? match[2] ?? match[3]!;
    if (!specifier.startsWith('.')) continue;
    const target = resolve(dirname(file), specifier.replace(/\.js$/, '.ts'));
    if (existsSync(target)) found.push(target);
    else if (existsSync(`${target}.ts`)) found.push(`${target}.ts`);
    else if (existsSync(join(target, 'index.ts'))) found.push(join(target, 'index.ts'));
  }
  return found;
}

const files = FOLDERS.flatMap((folder) => sources(join(ROOT, folder)));
const graph = new Map(files.map((file) => [file, importsOf(file)]));
const name = (file: string) => relative(ROOT, file);

t.test('the sources have no import cycle', async (t) => {
  // Tarjan's strongly connected components: a component of more than one module (or a module that imports itself) is a cycle.
  let index = 0;
  const order = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const cycles: string[][] = [];
  const visit = (file: string) => {
    order.set(file, index);
    low.set(file, index++);
    stack.push(file);
    onStack.add(file);
    for (const next of graph.get(file) ?? []) {
      if (!order.has(next)) {
        visit(next);
        low.set(file, Math.min(low.get(file)!, low.get(next)!));
      } else if (onStack.has(next)) {
        low.set(file, Math.min(low.get(file)!, order.get(next)!));
      }
    }
    if (low.get(file) === order.get(file)) {
      const component: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        onStack.delete(member);
        component.push(member);
      } while (member !== file);
      if (component.length > 1 || graph.get(file)?.includes(file)) cycles.push(component.map(name).sort());
    }
  };
  for (const file of files) if (!order.has(file)) visit(file);
  t.ok(files.length > 100, `${files.length} modules read`);
  t.same(cycles, [], 'no module is part of an import cycle');
});

t.test('src/ and workers/ import nothing from bench/ or test/', async (t) => {
  const strays: string[] = [];
  for (const [file, imports] of graph) {
    if (!PRODUCT.some((folder) => name(file).startsWith(`${folder}/`))) continue;
    for (const target of imports) if (!PRODUCT.some((folder) => name(target).startsWith(`${folder}/`))) strays.push(`${name(file)} -> ${name(target)}`);
  }
  t.same(strays, [], 'the product stands on its own');
});
