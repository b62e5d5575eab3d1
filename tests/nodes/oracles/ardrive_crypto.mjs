// Oracle for ArFS private drives: ardrive-core-js's own crypto (lib/utils/crypto.js)
// derives the keys and decrypts what odfweb3 wrote.
//
// Usage (cwd: tests/nodes/oracles; prints one JSON object on stdout). The drive password
// is read from stdin (never an argument):
//   node ardrive_crypto.mjs keys <jwk-file> <drive-id> [<file-id> ...]
//     -> {"driveKey": b64, "fileKeys": {fileId: b64}}
//   node ardrive_crypto.mjs decrypt-file <jwk-file> <drive-id> <file-id> <cipher-iv> <in-file> <out-file>
//   node ardrive_crypto.mjs decrypt-drive <jwk-file> <drive-id> <cipher-iv> <in-file> <out-file>
//     -> {"ok": true|false}; the plaintext goes to <out-file> (never to stdout)
import { createRequire } from "node:module";
import { readFileSync, writeFileSync } from "node:fs";

const require = createRequire(import.meta.url);
const crypto = require("ardrive-core-js/lib/utils/crypto");

const out = (obj) => process.stdout.write(JSON.stringify(obj) + "\n");
let pw;
const password = () => (pw ??= readFileSync(0, "utf8"));
// deriveDriveKey's old three-argument form: (password, driveId, JSON text of the JWK),
// Signature-Type v1.
const driveKey = (jwkFile, driveId) =>
  crypto.deriveDriveKey(password(), driveId, readFileSync(jwkFile, "utf8"));

async function keys([jwkFile, driveId, ...fileIds]) {
  const dk = await driveKey(jwkFile, driveId);
  const fileKeys = {};
  for (const id of fileIds) {
    fileKeys[id] = (await crypto.deriveFileKey(id, dk)).keyData.toString("base64");
  }
  out({ driveKey: dk.keyData.toString("base64"), fileKeys });
}

async function decryptFile([jwkFile, driveId, fileId, iv, inFile, outFile]) {
  const fk = await crypto.deriveFileKey(fileId, await driveKey(jwkFile, driveId));
  const data = readFileSync(inFile);
  // fileDecrypt returns Buffer "Error" (and logs) instead of throwing: check with
  // driveDecrypt, which is the same AES-256-GCM but throws on a bad tag.
  let plain;
  try {
    plain = await crypto.driveDecrypt(iv, fk, data);
  } catch (e) {
    out({ ok: false, error: String(e.message) });
    return;
  }
  const viaFileDecrypt = await crypto.fileDecrypt(iv, fk, data);
  writeFileSync(outFile, plain);
  out({ ok: true, sameAsFileDecrypt: Buffer.compare(plain, viaFileDecrypt) === 0 });
}

async function decryptDrive([jwkFile, driveId, iv, inFile, outFile]) {
  const dk = await driveKey(jwkFile, driveId);
  try {
    writeFileSync(outFile, await crypto.driveDecrypt(iv, dk, readFileSync(inFile)));
    out({ ok: true });
  } catch (e) {
    out({ ok: false, error: String(e.message) });
  }
}

const [cmd, ...args] = process.argv.slice(2);
const cmds = { keys, "decrypt-file": decryptFile, "decrypt-drive": decryptDrive };
if (!cmds[cmd]) {
  out({ error: `unknown command ${cmd}` });
  process.exit(2);
}
await cmds[cmd](args);
