// Independent IPNS implementation (npm `ipns`, used by Helia) as a test oracle for
// odfweb3's adapters/ipfs/ipns.py. Run from tests/nodes/oracles (its node_modules).
//
//   node ipns_oracle.mjs validate <name> <record-file>
//       unmarshal + ipnsValidator; prints {ok, value, sequence, ttl, validity,
//       hasV1, extensions} or {ok: false, error, message}; exit 0 either way.
//   node ipns_oracle.mjs create <privkey-protobuf-hex> <value> <seq> <lifetime-ms> [ttl-ns] [v1|v2]
//       createIPNSRecord (expiry = now + lifetime); prints the marshalled record hex.
//   node ipns_oracle.mjs create-at <privkey-protobuf-hex> <value> <seq> <rfc3339> <ttl-ns> [v1|v2]
//       createIPNSRecordWithExpiration (deterministic bytes); prints the record hex.
//   node ipns_oracle.mjs name <pubkey-protobuf-hex>
//       prints {name, peerId}: the base36 CIDv1 libp2p-key and base58btc peer ID.
//
// Integers (sequence, ttl) are printed as decimal strings: they are uint64.
import { readFileSync } from 'node:fs'
import { privateKeyFromProtobuf, publicKeyFromProtobuf } from '@libp2p/crypto/keys'
import { peerIdFromPublicKey, peerIdFromString } from '@libp2p/peer-id'
import * as cborg from 'cborg'
import {
  createIPNSRecord,
  createIPNSRecordWithExpiration,
  marshalIPNSRecord,
  multihashToIPNSRoutingKey,
  unmarshalIPNSRecord
} from 'ipns'
import { ipnsValidator } from 'ipns/validator'
import { base36 } from 'multiformats/bases/base36'
import { CID } from 'multiformats/cid'

const hex = (bytes) => Buffer.from(bytes).toString('hex')
const fromHex = (text) => new Uint8Array(Buffer.from(text, 'hex'))

// JSON-friendly view of decoded DAG-CBOR: bytes as {"/": {"bytes": hex}}, bigints as strings.
function plain (value) {
  if (value instanceof Uint8Array) return { bytes: hex(value) }
  if (typeof value === 'bigint') return value.toString()
  if (Array.isArray(value)) return value.map(plain)
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, plain(v)]))
  }
  return value
}

function nameToMultihash (name) {
  const text = name.replace(/^\/ipns\//, '')
  if (text.startsWith('1') || text.startsWith('Qm')) {
    return peerIdFromString(text).toMultihash()
  }
  const cid = text.startsWith('k') ? CID.parse(text, base36) : CID.parse(text)
  if (cid.code !== 0x72) throw new Error('not a libp2p-key CID')
  return cid.multihash
}

async function validate (name, file) {
  const buf = new Uint8Array(readFileSync(file))
  try {
    const routingKey = multihashToIPNSRoutingKey(nameToMultihash(name))
    await ipnsValidator(routingKey, buf)
    const record = unmarshalIPNSRecord(buf)
    const data = cborg.decode(record.data, { useMaps: false })
    const extensions = {}
    for (const [k, v] of Object.entries(data)) {
      if (!['Value', 'Validity', 'ValidityType', 'Sequence', 'TTL'].includes(k)) {
        extensions[k] = plain(v)
      }
    }
    return {
      ok: true,
      value: record.value,
      sequence: record.sequence.toString(),
      ttl: record.ttl.toString(),
      validity: record.validity,
      hasV1: record.signatureV1 != null,
      extensions
    }
  } catch (err) {
    return { ok: false, error: err.name ?? 'Error', message: String(err.message ?? err) }
  }
}

async function main (argv) {
  const [mode, ...args] = argv
  if (mode === 'validate' && args.length === 2) {
    console.log(JSON.stringify(await validate(args[0], args[1])))
  } else if ((mode === 'create' || mode === 'create-at') && args.length >= 4) {
    const [keyHex, value, seq, when, ttl, flavour] = args
    const key = privateKeyFromProtobuf(fromHex(keyHex))
    const options = { v1Compatible: flavour !== 'v2' }
    if (ttl !== undefined) options.ttlNs = BigInt(ttl)
    const record = mode === 'create'
      ? await createIPNSRecord(key, value, BigInt(seq), Number(when), options)
      : await createIPNSRecordWithExpiration(key, value, BigInt(seq), when, options)
    console.log(hex(marshalIPNSRecord(record)))
  } else if (mode === 'name' && args.length === 1) {
    const peerId = peerIdFromPublicKey(publicKeyFromProtobuf(fromHex(args[0])))
    console.log(JSON.stringify({ name: peerId.toCID().toString(base36), peerId: peerId.toString() }))
  } else {
    console.error('usage: ipns_oracle.mjs validate <name> <file> | create <key-hex> <value> <seq> ' +
      '<lifetime-ms> [ttl-ns] [v1|v2] | create-at <key-hex> <value> <seq> <rfc3339> <ttl-ns> [v1|v2] | ' +
      'name <pubkey-hex>')
    process.exit(2)
  }
}

await main(process.argv.slice(2))
