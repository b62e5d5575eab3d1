// Independent oracle for odfweb3's Arweave formats: the npm `arweave` and `arbundles`
// packages check what the Python code writes, and write what the Python code must read.
//
// Usage (cwd: tests/nodes/oracles; every command prints one JSON object on stdout):
//   node arweave_oracle.mjs verify-tx <tx-json-file>
//   node arweave_oracle.mjs sign-tx <jwk-file> <data-file> <tags-json> <out-json-file>
//   node arweave_oracle.mjs data-root <data-file>
//   node arweave_oracle.mjs verify-item <item-file>
//   node arweave_oracle.mjs make-item <jwk-file> <data-file> <tags-json> <out-file> [target-b64url] [anchor-32-chars]
//   node arweave_oracle.mjs verify-bundle <bundle-file>
//   node arweave_oracle.mjs make-bundle <jwk-file> <spec-json> <out-file>
//     spec-json: [{"data_file": "...", "tags": [{"name": "...", "value": "..."}]}, ...]
// Tags JSON is [{"name": "...", "value": "..."}] (text, UTF-8).
import { createRequire } from "node:module";
import { readFileSync, writeFileSync } from "node:fs";

const require = createRequire(import.meta.url);
const Arweave = require("arweave");
const merkle = require("arweave/node/lib/merkle");
const arbundles = require("arbundles");

const arweave = Arweave.init({ host: "127.0.0.1", port: 1, protocol: "http" });
const b64 = (buf) => arweave.utils.bufferTob64Url(new Uint8Array(buf));
const readJson = (path) => JSON.parse(readFileSync(path, "utf8"));
const out = (obj) => process.stdout.write(JSON.stringify(obj) + "\n");

async function verifyTx([file]) {
  const tx = arweave.transactions.fromRaw(readJson(file));
  let valid;
  try {
    valid = await arweave.transactions.verify(tx);
  } catch (e) {
    valid = false;
  }
  out({ valid, id: tx.id, tags: tx.tags.map((t) => ({
    name: t.get("name", { decode: true, string: true }),
    value: t.get("value", { decode: true, string: true }),
  })) });
}

async function signTx([jwkFile, dataFile, tagsJson, outFile]) {
  const jwk = readJson(jwkFile);
  const data = readFileSync(dataFile);
  // last_tx and reward given, so createTransaction does not ask a gateway.
  const tx = await arweave.createTransaction(
    { data, last_tx: b64(Buffer.alloc(32, 7)), reward: "123456789" }, jwk);
  for (const { name, value } of JSON.parse(tagsJson)) tx.addTag(name, value);
  await arweave.transactions.sign(tx, jwk);
  writeFileSync(outFile, JSON.stringify(tx.toJSON()));
  out({ id: tx.id, data_root: tx.data_root });
}

async function dataRoot([file]) {
  const data = readFileSync(file);
  const { data_root, chunks, proofs } = await merkle.generateTransactionChunks(data);
  out({
    data_root: b64(data_root),
    chunks: chunks.map((c) => [c.minByteRange, c.maxByteRange, b64(c.dataHash)]),
    proofs: proofs.map((p) => [p.offset, b64(p.proof)]),
  });
}

function describeItem(item) {
  return {
    id: item.id,
    owner: item.owner,
    target: item.target,
    anchor: item.anchor,
    tags: item.tags,
    data_size: item.rawData.byteLength,
    data: b64(item.rawData),
  };
}

async function verifyItem([file]) {
  const binary = readFileSync(file);
  const valid = await arbundles.DataItem.verify(binary);
  out({ valid, ...(valid ? describeItem(new arbundles.DataItem(binary)) : {}) });
}

async function makeItem([jwkFile, dataFile, tagsJson, outFile, target, anchor]) {
  const signer = new arbundles.ArweaveSigner(readJson(jwkFile));
  const opts = { tags: JSON.parse(tagsJson) };
  if (target) opts.target = target;
  if (anchor) opts.anchor = anchor;
  const item = arbundles.createData(readFileSync(dataFile), signer, opts);
  await item.sign(signer);
  writeFileSync(outFile, item.getRaw());
  out({ id: item.id, size: item.getRaw().byteLength });
}

async function verifyBundle([file]) {
  let bundle;
  try {
    bundle = new arbundles.Bundle(readFileSync(file));
  } catch (e) {
    out({ valid: false, error: String(e.message || e) });
    return;
  }
  const valid = await bundle.verify();
  out({ valid, count: bundle.length, ids: bundle.getIds(), items: bundle.items.map(describeItem) });
}

async function makeBundle([jwkFile, specFile, outFile]) {
  const signer = new arbundles.ArweaveSigner(readJson(jwkFile));
  const items = readJson(specFile).map(({ data_file, tags }) =>
    arbundles.createData(readFileSync(data_file), signer, { tags }));
  const bundle = await arbundles.bundleAndSignData(items, signer);
  writeFileSync(outFile, bundle.getRaw());
  out({ ids: bundle.getIds(), size: bundle.getRaw().byteLength });
}

const commands = {
  "verify-tx": verifyTx,
  "sign-tx": signTx,
  "data-root": dataRoot,
  "verify-item": verifyItem,
  "make-item": makeItem,
  "verify-bundle": verifyBundle,
  "make-bundle": makeBundle,
};

const [cmd, ...args] = process.argv.slice(2);
if (!commands[cmd]) {
  process.stderr.write(`usage: arweave_oracle.mjs {${Object.keys(commands).join("|")}} ...\n`);
  process.exit(2);
}
await commands[cmd](args);
