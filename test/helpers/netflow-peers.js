'use strict'

// The real peers of the NetFlow oracle test, run as external programs
// (Debian packages, softflowd BSD, nfdump BSD): softflowd exports a pcap's
// flows to a UDP port of ours, so the test holds the exact datagrams; nfcapd
// receives the same datagrams and nfdump reads back what it stored.

const dgram = require('node:dgram')
const fs = require('node:fs')
const path = require('node:path')
const { spawn, spawnSync } = require('node:child_process')
const { freePort } = require('./ports')

/** The peers missing from PATH, by program name. */
function missingPeers () {
  return ['softflowd', 'nfcapd', 'nfdump'].filter((cmd) => spawnSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' }).status !== 0)
}

/** nfdump's version as [major, minor, patch] ("nfdump: Version: NSEL-NEL1.7.1"). */
function nfdumpVersion () {
  const out = spawnSync('nfdump', ['-V'], { encoding: 'utf8' })
  const m = /(\d+)\.(\d+)\.(\d+)/.exec(`${out.stdout}${out.stderr}`)
  return m ? m.slice(1).map(Number) : [0, 0, 0]
}

function run (cmd, args, { env } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } })
    let output = ''
    child.stdout.on('data', (d) => { output += d })
    child.stderr.on('data', (d) => { output += d })
    child.on('error', reject)
    child.on('exit', (code) => code === 0 ? resolve(output) : reject(new Error(`${cmd} ${args.join(' ')} exited ${code}: ${output}`)))
  })
}

const settle = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

/**
 * softflowd reads `pcap` and exports every flow to a socket of ours; with
 * -r it exports all flows at the end of the file and exits. No -c: -r turns
 * the control socket off, and a -c after it turns it back on, where 1.1.0
 * reads poll results it never polled for (softflowd.c main loop) and can
 * block in accept() until softflowctl pokes it.
 * @param {string} pcap
 * @param {string[]} args e.g. ['-v', '9', '-a']
 * @returns {Promise<{ datagrams: Buffer[], packets: number, flows: number }>} what we received, and what softflowd says it sent
 */
async function softflowdExport (pcap, args) {
  const socket = dgram.createSocket({ type: 'udp4', recvBufferSize: 4 << 20 })
  const datagrams = []
  socket.on('message', (msg) => datagrams.push(msg))
  await new Promise((resolve) => socket.bind(0, '127.0.0.1', resolve))
  try {
    const output = await run('softflowd', ['-d', '-r', pcap, '-n', `127.0.0.1:${socket.address().port}`, ...args])
    const m = /Flows exported: (\d+) \(\d+ records\) in (\d+) packets/.exec(output)
    if (!m) throw new Error(`softflowd did not say what it exported: ${output}`)
    const packets = Number(m[2])
    for (let waited = 0; datagrams.length < packets && waited < 5000; waited += 50) await settle(50)
    return { datagrams, packets, flows: Number(m[1]) }
  } finally {
    socket.close()
  }
}

/**
 * nfcapd receives `datagrams` (in order, from one socket, so one exporter)
 * and stores them under `dir`; nfdump reads them back as JSON.
 * @returns {Promise<{ flows: object[], stats: { flows: number, sequenceErrors: number, badPackets: number } }>}
 */
async function nfdumpOf (datagrams, dir) {
  const port = await freePort()
  const capd = spawn('nfcapd', ['-B', '4000000', '-b', '127.0.0.1', '-p', String(port), '-w', dir], { stdio: ['ignore', 'pipe', 'pipe'] })
  let output = ''
  capd.stdout.on('data', (d) => { output += d })
  capd.stderr.on('data', (d) => { output += d })
  const exited = new Promise((resolve) => capd.on('exit', resolve))
  for (let waited = 0; !/Startup/.test(output); waited += 50) {
    if (waited > 10000) { capd.kill(); throw new Error(`nfcapd did not start: ${output}`) }
    await settle(50)
  }
  const sender = dgram.createSocket('udp4')
  for (const datagram of datagrams) await new Promise((resolve, reject) => sender.send(datagram, port, '127.0.0.1', (err) => err ? reject(err) : resolve()))
  sender.close()
  await settle(300)
  capd.kill('SIGTERM')
  await exited
  const stats = /Flows: (\d+), Packets: \d+, Bytes: \d+, Sequence Errors: (\d+), Bad Packets: (\d+)/.exec(output)
  if (!stats) throw new Error(`nfcapd did not report: ${output}`)
  const flows = []
  for (const file of fs.readdirSync(dir).filter((f) => /^nfcapd\.\d{12}$/.test(f))) {
    const json = await run('nfdump', ['-r', path.join(dir, file), '-o', 'json'], { env: { TZ: 'UTC' } })
    flows.push(...JSON.parse(json || '[]').filter((r) => r.type === 'FLOW'))
  }
  return { flows, stats: { flows: Number(stats[1]), sequenceErrors: Number(stats[2]), badPackets: Number(stats[3]) } }
}

// nfdump's TCP flags are 8 characters, "CEUAPRSF", a dot for each bit clear.
function flagsOf (text) {
  return [...text].reduce((bits, c, i) => c === '.' ? bits : bits | (0x80 >> i), 0)
}

/** An nfdump JSON flow in our record's terms, for the fields both hold. */
function fromNfdump (f) {
  return {
    srcAddr: f.src4_addr ?? f.src6_addr,
    dstAddr: f.dst4_addr ?? f.dst6_addr,
    srcPort: f.src_port,
    dstPort: f.dst_port,
    proto: f.proto,
    packets: f.in_packets,
    bytes: f.in_bytes,
    first: Date.parse(`${f.first}Z`),
    last: Date.parse(`${f.last}Z`),
    tcpFlags: flagsOf(f.tcp_flags),
    tos: f.src_tos,
    inputIf: f.input_snmp ?? 0,
    outputIf: f.output_snmp ?? 0
  }
}

// A flow's traffic fields (what every export and nfdump carry), its key, and flows in key order.
const TRAFFIC = ['srcAddr', 'dstAddr', 'srcPort', 'dstPort', 'proto', 'packets', 'bytes', 'tcpFlags', 'tos']
const traffic = (f) => Object.fromEntries(TRAFFIC.map((k) => [k, f[k]]))
const key = (f) => `${f.proto} ${f.srcAddr} ${f.srcPort} ${f.dstAddr} ${f.dstPort}`
const byKey = (list) => [...list].sort((a, b) => key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0)

module.exports = { missingPeers, nfdumpVersion, softflowdExport, nfdumpOf, fromNfdump, traffic, key, byKey }
