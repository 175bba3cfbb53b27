'use strict'
// One allow-list lookup per datagram, as the native receive path makes it:
// our matcher (lib/shared/allow-list.js, on the entry's address bytes)
// against Node's net.BlockList (which needs the address as a string, so
// the entry's text is sliced first), over the same batch, in the same run.
// Usage: node benchmarks/allow-list.js [--rounds N] [--prefixes N]
const net = require('node:net')
const minimist = require('minimist')
const { AllowList } = require('../lib/shared/allow-list')
const { writeEntry, entryEnd, entryAddressStart, entryAddressLength } = require('../lib/shared/batch-codec')

const args = minimist(process.argv.slice(2), { default: { rounds: 2000, prefixes: 20 } })

// The senders' prefixes plus `prefixes` others, so a lookup is not the first entry.
function entries () {
  const list = ['10.77.1.0/24', 'fd77:1::/64', '127.0.0.1']
  for (let i = 0; i < args.prefixes; i++) list.push(i % 2 ? `172.${16 + i}.0.0/16` : `2001:db8:${i.toString(16)}::/48`)
  return list
}

function blockListOf (list) {
  const blockList = new net.BlockList()
  for (const entry of list) {
    const [address, prefix] = entry.split('/')
    const family = net.isIPv6(address) ? 'ipv6' : 'ipv4'
    if (prefix === undefined) blockList.addAddress(address, family)
    else blockList.addSubnet(address, Number(prefix), family)
  }
  return blockList
}

// A batch of 256 entries from a mix of sources: IPv4, IPv4-mapped, IPv6, in and out of the list.
function batch () {
  const sources = ['10.77.1.2', '::ffff:10.77.1.3', 'fd77:1::2', '10.77.2.2', 'fd77:2::2', '127.0.0.1', '192.0.2.9', '2001:db8:4::1']
  const buf = Buffer.alloc(256 * 300)
  let end = 0
  for (let i = 0; i < 256; i++) end = writeEntry(buf, end, Buffer.alloc(200), sources[(i * 7) % sources.length], 5000 + i)
  return { buf, end }
}

function run (name, lookup, buf, end) {
  let allowed = 0
  const started = process.hrtime.bigint()
  for (let r = 0; r < args.rounds; r++) {
    for (let offset = 0; offset < end; offset = entryEnd(buf, offset)) {
      if (lookup(buf, entryAddressStart(offset), entryAddressLength(buf, offset))) allowed++
    }
  }
  const ns = Number(process.hrtime.bigint() - started) / (args.rounds * 256)
  return { name, nsPerLookup: +ns.toFixed(1), allowed: allowed / args.rounds }
}

function main () {
  const list = entries()
  const ours = new AllowList(list)
  const blockList = blockListOf(list)
  const { buf, end } = batch()
  const oursLookup = (b, start, length) => ours.allowsBytes(b, start, length)
  const blockLookup = (b, start, length) => {
    const address = b.latin1Slice(start, start + length)
    return blockList.check(address, address.includes(':') ? 'ipv6' : 'ipv4')
  }
  const rows = []
  for (let i = 0; i < 3; i++) rows.push(run('AllowList', oursLookup, buf, end), run('net.BlockList', blockLookup, buf, end))
  const best = (name) => Math.min(...rows.filter((r) => r.name === name).map((r) => r.nsPerLookup))
  const result = { entries: list.length, ours: best('AllowList'), blockList: best('net.BlockList') }
  console.table(rows)
  console.log(`ns per lookup (best of 3): AllowList ${result.ours}, net.BlockList ${result.blockList} (ratio ${(result.blockList / result.ours).toFixed(1)}); allowed per 256: ${rows[0].allowed} vs ${rows[1].allowed}`)
  console.log(JSON.stringify({ bench: 'allow-list', ...result, allowedPer256: { ours: rows[0].allowed, blockList: rows[1].allowed } }))
}

main()
