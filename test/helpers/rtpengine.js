'use strict'

// rtpengine (Debian rtpengine-daemon, run as an external program) as a real
// HEP agent: a media relay in userspace (--table=-1) that sends the RTCP it
// relays to a HEP collector (--homer) with the call's Call-ID. Calls are set
// up over its ng control protocol: bencoded dictionaries over UDP, each
// prefixed with a cookie (offer, answer, query, delete).

const { spawn } = require('node:child_process')
const dgram = require('node:dgram')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { once } = require('node:events')
const { requireBinary } = require('./rtp-peers')
const { waitFor } = require('./wait-for')
const { freePortPair } = require('./ports')

const HOST = '127.0.0.1'

function bencode (value) {
  if (typeof value === 'number') return Buffer.from(`i${Math.trunc(value)}e`)
  if (typeof value === 'string' || Buffer.isBuffer(value)) {
    const bytes = Buffer.isBuffer(value) ? value : Buffer.from(value)
    return Buffer.concat([Buffer.from(`${bytes.length}:`), bytes])
  }
  if (Array.isArray(value)) return Buffer.concat([Buffer.from('l'), ...value.map(bencode), Buffer.from('e')])
  const keys = Object.keys(value).sort()
  return Buffer.concat([Buffer.from('d'), ...keys.flatMap((key) => [bencode(key), bencode(value[key])]), Buffer.from('e')])
}

/** Decodes one bencoded value at `at`; returns [value, next offset]. Strings come back as strings. */
function bdecode (buf, at = 0) {
  const c = String.fromCharCode(buf[at])
  if (c === 'i') {
    const end = buf.indexOf(0x65, at)
    return [Number(buf.toString('latin1', at + 1, end)), end + 1]
  }
  if (c === 'l' || c === 'd') {
    const items = []
    at++
    while (buf[at] !== 0x65) {
      const [item, next] = bdecode(buf, at)
      items.push(item)
      at = next
    }
    if (c === 'l') return [items, at + 1]
    const dict = {}
    for (let i = 0; i < items.length; i += 2) dict[items[i]] = items[i + 1]
    return [dict, at + 1]
  }
  const colon = buf.indexOf(0x3a, at)
  const length = Number(buf.toString('latin1', at, colon))
  return [buf.toString('utf8', colon + 1, colon + 1 + length), colon + 1 + length]
}

// G.722 as phones often offer it: the static payload type 9 with no a=rtpmap (RFC 3551 Table 4 says the rest).
const FORMATS = { pcma: ['8', 'a=rtpmap:8 PCMA/8000'], opus: ['111', 'a=rtpmap:111 opus/48000/2'], g722: ['9', null] }

/** An SDP offer or answer for one PCMA (Opus, G.722) audio stream at 127.0.0.1:`port`. */
function sdp (port, codec = 'pcma') {
  const [payloadType, rtpmap] = FORMATS[codec]
  return ['v=0', `o=- ${port} 1 IN IP4 ${HOST}`, 's=-', `c=IN IP4 ${HOST}`, 't=0 0', `m=audio ${port} RTP/AVP ${payloadType}`, rtpmap, 'a=sendrecv', ''].filter((line) => line !== null).join('\r\n')
}

function sdpPort (text) {
  const m = /^m=audio (\d+) /m.exec(text || '')
  if (!m) throw new Error(`no audio port in rtpengine's SDP:\n${text}`)
  return Number(m[1])
}

/**
 * Starts rtpengine sending HEP to `hepPort` (`hepProtocol` udp or tcp).
 * Returns `{ ng(command), relay(callId, portA, portB), query, delete, log() }`;
 * stopped after the test.
 */
async function startRtpengine (t, { hepPort, hepProtocol = 'udp', hepId = 2001 }) {
  requireBinary('rtpengine', 'rtpengine-daemon')
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rtpengine-'))
  const ngPort = (await freePortPair()) + 1
  const portMin = 30000 + 100 * Math.floor(Math.random() * 300)
  const args = ['--config-file=none', '--foreground', '--log-stderr', '--table=-1', `--interface=${HOST}`,
    `--listen-ng=${HOST}:${ngPort}`, `--port-min=${portMin}`, `--port-max=${portMin + 99}`,
    `--homer=${HOST}:${hepPort}`, `--homer-protocol=${hepProtocol}`, `--homer-id=${hepId}`,
    `--pidfile=${path.join(dir, 'pid')}`, '--log-level=6', '--delete-delay=0']
  const child = spawn('rtpengine', args, { stdio: ['ignore', 'ignore', 'pipe'] })
  let stderr = ''
  child.stderr.setEncoding('utf8').on('data', (chunk) => { stderr = (stderr + chunk).slice(-20000) })
  const socket = dgram.createSocket('udp4')
  socket.bind(0, HOST)
  await once(socket, 'listening')
  t.after(async () => {
    socket.close()
    if (child.exitCode === null) {
      child.kill('SIGTERM')
      await Promise.race([once(child, 'exit'), new Promise((resolve) => setTimeout(resolve, 3000))])
      if (child.exitCode === null) child.kill('SIGKILL')
    }
    fs.rmSync(dir, { recursive: true, force: true })
  })
  let cookie = 0
  const pending = new Map()
  socket.on('message', (msg) => {
    const space = msg.indexOf(0x20)
    const id = msg.toString('latin1', 0, space)
    const waiter = pending.get(id)
    if (waiter) {
      pending.delete(id)
      waiter(bdecode(msg, space + 1)[0])
    }
  })
  const ng = (command) => new Promise((resolve, reject) => {
    const id = `c${++cookie}`
    const timer = setTimeout(() => { pending.delete(id); reject(new Error(`rtpengine did not answer ${command.command} within 3 s; its log:\n${stderr}`)) }, 3000)
    pending.set(id, (reply) => { clearTimeout(timer); resolve(reply) })
    socket.send(Buffer.concat([Buffer.from(`${id} `), bencode(command)]), ngPort, HOST)
  })
  await waitFor(async () => {
    if (child.exitCode !== null) throw new Error(`rtpengine exited (${child.exitCode}):\n${stderr}`)
    try {
      return (await ng({ command: 'ping' })).result === 'pong'
    } catch {
      return false
    }
  }, { what: 'rtpengine to answer ping', timeout: 10000 })

  /**
   * Sets up a call between A (RTP at portA) and B (portB) through the relay:
   * returns where A and B must send their media (RTCP to the port + 1), and
   * the four SDP bodies of the call as a proxy would see them: A's offer,
   * rtpengine's rewrite of it (to B), B's answer, rtpengine's rewrite (to A).
   */
  async function relay (callId, portA, portB, { codec = 'pcma' } = {}) {
    const sdps = { offerA: sdp(portA, codec), answerB: sdp(portB, codec) }
    const offer = await ng({ command: 'offer', 'call-id': callId, 'from-tag': 'tag-a', sdp: sdps.offerA, ICE: 'remove', flags: ['trust-address'] })
    if (offer.result !== 'ok') throw new Error(`offer refused: ${JSON.stringify(offer)}`)
    const answer = await ng({ command: 'answer', 'call-id': callId, 'from-tag': 'tag-a', 'to-tag': 'tag-b', sdp: sdps.answerB, ICE: 'remove', flags: ['trust-address'] })
    if (answer.result !== 'ok') throw new Error(`answer refused: ${JSON.stringify(answer)}`)
    return { aSendsTo: sdpPort(answer.sdp), bSendsTo: sdpPort(offer.sdp), sdps: { ...sdps, offerToB: String(offer.sdp), answerToA: String(answer.sdp) } }
  }

  return {
    ng,
    relay,
    query: (callId) => ng({ command: 'query', 'call-id': callId }),
    delete: (callId) => ng({ command: 'delete', 'call-id': callId, 'from-tag': 'tag-a' }),
    log: () => stderr
  }
}

module.exports = { startRtpengine, bencode, bdecode }
