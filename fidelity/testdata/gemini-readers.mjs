// Lists the Gemini sessions of each chats dir given, with @google/gemini-cli's own
// getSessionFiles — the function `gemini --list-sessions` calls — and prints, per
// dir, every field of the SessionInfo rows it returns that the CLI does not print
// (message counts, start and update times, the untruncated first prompt).
//
// usage: node gemini-readers.mjs READERS_DIR CHATS_DIR...
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

const [readers, ...chatsDirs] = process.argv.slice(2);
const pkgDir = path.join(readers, "node_modules", "@google", "gemini-cli");
const pkg = JSON.parse(fs.readFileSync(path.join(pkgDir, "package.json"), "utf8"));
const bundle = path.join(pkgDir, "bundle");

// Follow gemini.js's static imports to the chunk the CLI takes getSessionFiles
// from: the bundle holds several builds of it, and only that one is the CLI's.
function findChunk() {
  const seen = new Set();
  const queue = ["gemini.js"];
  while (queue.length > 0) {
    const name = queue.shift();
    if (seen.has(name)) continue;
    seen.add(name);
    const text = fs.readFileSync(path.join(bundle, name), "utf8");
    if (/\bvar getSessionFiles = /.test(text) && /^\s*getSessionFiles,?$/m.test(text)) {
      return name;
    }
    for (const m of text.matchAll(/(?:from|import)\s*\(?\s*"\.\/([^"]+\.js)"/g)) {
      queue.push(m[1]);
    }
  }
  throw new Error(`no chunk reachable from ${bundle}/gemini.js exports getSessionFiles`);
}

const chunk = findChunk();
const mod = await import(pathToFileURL(path.join(bundle, chunk)).href);
const out = { version: pkg.version, chunk, dirs: {} };
for (const dir of chatsDirs) {
  const sessions = await mod.getSessionFiles(dir);
  out.dirs[dir] = sessions.map((s) => ({
    id: s.id,
    fileName: s.fileName,
    index: s.index,
    startTime: s.startTime,
    lastUpdated: s.lastUpdated,
    messageCount: s.messageCount,
    displayName: s.displayName,
    firstUserMessage: s.firstUserMessage,
    summary: s.summary ?? "",
  }));
}
process.stdout.write(JSON.stringify(out));
