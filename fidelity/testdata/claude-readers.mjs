// Runs Claude Code's real readers over the store under $HOME/.claude/projects and
// prints one JSON object: what the Agent SDK lists (listSessions, plus the length
// of getSessionMessages per session) and what Claude Code 2.1.29's picker makes of
// each project's sessions-index.json (its reading code, lifted out of cli.js).
// Usage: node claude-readers.mjs <readers install dir>
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const readers = process.argv[2];
const sdk = await import(pathToFileURL(path.join(readers, 'node_modules/@anthropic-ai/claude-agent-sdk/sdk.mjs')).href);

const sdkSessions = [];
for (const s of await sdk.listSessions()) {
  const msgs = await sdk.getSessionMessages(s.sessionId);
  sdkSessions.push({ ...s, messageCount: msgs.length });
}

// Lift the index-reading path of 2.1.29's cli.js: hZ6 (list one project dir),
// IIA (read sessions-index.json), V9q (stat the transcripts), yeY (an index entry
// as a picker row), NIA (the picker's filter), GY1 (its order). Only the parse of
// a stale or missing entry (SeY) is replaced: it records the file instead.
const cli = fs.readFileSync(path.join(readers, 'node_modules/@anthropic-ai/claude-code/cli.js'), 'utf8');
const version = JSON.parse(fs.readFileSync(path.join(readers, 'node_modules/@anthropic-ai/claude-code/package.json'), 'utf8')).version;
function lift(name) {
  const start = cli.indexOf(`function ${name}(`);
  if (start < 0) throw new Error(`cli.js ${version}: function ${name} not found`);
  const from = cli.slice(start - 6, start) === 'async ' ? start - 6 : start;
  let depth = 0;
  for (let i = cli.indexOf('){', start) + 1; i < cli.length; i++) {
    // The lifted functions hold no braces inside strings or regexps.
    if (cli[i] === '{') depth++;
    else if (cli[i] === '}' && --depth === 0) return cli.slice(from, i + 1);
  }
  throw new Error(`cli.js: function ${name} does not end`);
}
const names = ['hZ6', 'IIA', 'V9q', 'yeY', 'NIA', 'GY1'];
const reparsed = [];
const stubs = {
  // x1 is Claude Code's fs wrapper; its readdirSync yields Dirents.
  x1: () => ({ ...fs, readdirSync: (d) => fs.readdirSync(d, { withFileTypes: true }) }), vv: path.join, N9q: 'sessions-index.json', ZIA: 1, wA: JSON.parse,
  I: () => {}, q1: () => {}, $eY: (n, ext) => path.basename(n, ext),
  uT: (s) => (typeof s === 'string' && /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(s) ? s : null),
  SeY: async (p) => { reparsed.push(p); return []; },
};
const make = new Function(...Object.keys(stubs), names.map(lift).join('\n') + '\nreturn {hZ6, NIA, GY1};');
const { hZ6, NIA, GY1 } = make(...Object.values(stubs));

const projects = path.join(process.env.HOME, '.claude', 'projects');
const picker = [];
for (const d of fs.readdirSync(projects, { withFileTypes: true })) {
  if (!d.isDirectory()) continue;
  const rows = (await hZ6(path.join(projects, d.name))).filter((r) => NIA(r));
  for (const r of GY1(rows)) {
    picker.push({ dir: d.name, sessionId: r.sessionId, firstPrompt: r.firstPrompt, summary: r.summary,
      messageCount: r.messageCount, modified: r.modified.toISOString(), created: r.created.toISOString() });
  }
}
// Node's own reading of each transcript's mtime, to compare with fileMtime.
const mtimes = {};
for (const d of fs.readdirSync(projects, { withFileTypes: true })) {
  if (!d.isDirectory()) continue;
  for (const f of fs.readdirSync(path.join(projects, d.name))) {
    if (f.endsWith('.jsonl')) mtimes[path.join(projects, d.name, f)] = fs.statSync(path.join(projects, d.name, f)).mtime.getTime();
  }
}
console.log(JSON.stringify({ cliVersion: version, sdk: sdkSessions, picker, reparsed, mtimes }));
