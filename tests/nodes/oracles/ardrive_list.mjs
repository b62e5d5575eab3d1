// Interoperability oracle: what ArDrive's own library (ardrive-core-js, anonymous/read-only API)
// sees of a public ArFS drive on a gateway (in the tests: arlocal).
//
// Usage (cwd: tests/nodes/oracles; prints one JSON object on stdout):
//   node ardrive_list.mjs <gateway-url> <drive-id> [owner-address]
// Without an owner, ardrive-core-js looks the drive's owner up itself (GraphQL by Drive-Id).
// Output: {"drive": {name, driveId, rootFolderId, owner (as ardrive finds it), ...}, "entries": [{entityType, name,
//   path, entityId, parentFolderId, size, dataTxId, metaDataTxId, dataContentType}, ...]}
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const Arweave = require("arweave");
const { arDriveAnonymousFactory, EID, ADDR } = require("ardrive-core-js");

const [gatewayUrl, driveIdText, ownerText] = process.argv.slice(2);
if (!gatewayUrl || !driveIdText) {
  process.stderr.write("usage: node ardrive_list.mjs <gateway-url> <drive-id> [owner-address]\n");
  process.exit(2);
}
const url = new URL(gatewayUrl);
const protocol = url.protocol.replace(":", "");
const port = url.port ? Number(url.port) : protocol === "https" ? 443 : 80;
const arweave = Arweave.init({ host: url.hostname, port, protocol });
const ardrive = arDriveAnonymousFactory({ arweave });

// ardrive-core-js wraps ids, addresses and sizes in small classes; print them as plain text.
const text = (v) => (v === undefined || v === null ? null : `${v}`);

async function main() {
  const driveId = EID(driveIdText);
  const owner = ownerText ? ADDR(ownerText) : undefined;
  // Without an owner each call below makes ardrive-core-js look it up (GraphQL by entity id);
  // the owner it finds for the drive is reported too.
  const drive = await ardrive.getPublicDrive({ driveId, owner });
  const foundOwner = await ardrive.getOwnerForDriveId(driveId);
  const children = await ardrive.listPublicFolder({
    folderId: drive.rootFolderId,
    maxDepth: 2,
    includeRoot: false,
    owner,
  });
  const entries = children.map((e) => ({
    entityType: e.entityType,
    name: e.name,
    path: e.path,
    entityId: text(e.entityId),
    parentFolderId: text(e.parentFolderId),
    size: e.size === undefined ? null : Number(`${e.size}`),
    dataTxId: text(e.dataTxId),
    metaDataTxId: text(e.txId),
    dataContentType: e.dataContentType ?? null,
  }));
  process.stdout.write(
    JSON.stringify({
      drive: {
        name: drive.name,
        driveId: text(drive.driveId),
        rootFolderId: text(drive.rootFolderId),
        owner: text(foundOwner),
        arFS: drive.arFS,
        appName: drive.appName,
        drivePrivacy: drive.drivePrivacy,
        metaDataTxId: text(drive.txId),
      },
      entries,
    }) + "\n",
  );
}

main().catch((err) => {
  process.stderr.write(`ardrive_list: ${err && err.stack ? err.stack : err}\n`);
  process.exit(1);
});
