'use strict'

// Launch real RTP/RTCP peers (ffmpeg, GStreamer) and oracles (tshark) for
// tests. Every child is killed in t.after, and a missing binary fails the
// test with the Debian package that provides it: nothing is skipped.

const { spawn, execFile } = require('node:child_process')
const { once } = require('node:events')
const dgram = require('node:dgram')
const fs = require('node:fs')
const path = require('node:path')

const HOST = '127.0.0.1'

/**
 * Throw unless `binary` is on PATH, naming the Debian package to install.
 * @param {string} binary
 * @param {string} debianPackage
 */
function requireBinary (binary, debianPackage) {
  const found = (process.env.PATH || '').split(path.delimiter).some((dir) => isExecutable(path.join(dir, binary)))
  if (!found) throw new Error(`${binary} not found on PATH: install the Debian package "${debianPackage}" (apt-get install -y ${debianPackage})`)
}

function isExecutable (file) {
  try {
    fs.accessSync(file, fs.constants.X_OK)
    return true
  } catch {
    return false
  }
}

/**
 * Throw unless each GStreamer element exists, naming its Debian package.
 * @param {string[]} elements
 * @param {string} debianPackage
 * @returns {Promise<void>}
 */
async function requireGstElements (elements, debianPackage) {
  requireBinary('gst-inspect-1.0', 'gstreamer1.0-tools')
  for (const element of elements) {
    const { code } = await run('gst-inspect-1.0', ['--exists', element])
    if (code !== 0) throw new Error(`GStreamer element "${element}" missing: install the Debian package "${debianPackage}"`)
  }
}

/**
 * Run a command to completion, collecting its output.
 * @returns {Promise<{ code: number, stdout: string, stderr: string }>}
 */
function run (cmd, args, options = {}) {
  return new Promise((resolve) => {
    execFile(cmd, args, { maxBuffer: 16 << 20, timeout: 30000, ...options }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, stdout, stderr })
    })
  })
}

/**
 * A UDP port that was free a moment ago, for peers that cannot report the
 * port they bound (gst-launch's udpsrc). Racy in theory, fine on loopback.
 * @returns {Promise<number>}
 */
async function freeUdpPort () {
  const socket = dgram.createSocket('udp4')
  socket.bind(0, HOST)
  await once(socket, 'listening')
  const { port } = socket.address()
  await new Promise((resolve) => socket.close(resolve))
  return port
}

/**
 * Spawn a peer that is SIGKILLed in t.after if still running.
 * @returns {{ child: import('node:child_process').ChildProcess, exited: Promise<{ code: number|null, signal: string|null }>, output: () => string }}
 */
function spawnPeer (t, cmd, args) {
  const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] })
  let output = ''
  const collect = (chunk) => { output = (output + chunk).slice(-8192) }
  child.stdout.on('data', collect)
  child.stderr.on('data', collect)
  const exited = new Promise((resolve) => child.once('close', (code, signal) => resolve({ code, signal })))
  child.once('error', (err) => { output += `\nspawn error: ${err.message}` })
  t.after(() => { if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL') })
  return { child, exited, output: () => output, waitFor: (text, ms) => waitForOutput(child, () => output, text, ms) }
}

function waitForOutput (child, output, text, ms) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => done(new Error(`timed out waiting for "${text}"; output:\n${output()}`)), ms)
    const check = () => { if (output().includes(text)) done() }
    const onClose = () => done(new Error(`exited before "${text}"; output:\n${output()}`))
    function done (err) {
      clearTimeout(timer)
      child.stdout.off('data', check)
      child.stderr.off('data', check)
      child.off('close', onClose)
      err ? reject(err) : resolve()
    }
    child.stdout.on('data', check)
    child.stderr.on('data', check)
    child.once('close', onClose)
    check()
  })
}

/**
 * ffmpeg sending `seconds` of a PCMU sine as RTP to rtpPort, in real time,
 * with its RTCP (SR + SDES CNAME, SR + SDES + BYE at the end) to rtcpPort;
 * with `srtp` (a suite: AES_CM_128_HMAC_SHA1_80 or _32) both encrypted (RFC 3711).
 */
function startFfmpegSender (t, { rtpPort, rtcpPort, seconds = 3, cname = 'ffmpeg@test', srtp = null }) {
  requireBinary('ffmpeg', 'ffmpeg')
  const keys = srtp === null ? [] : ['-srtp_out_suite', srtp, '-srtp_out_params', Buffer.alloc(30, 7).toString('base64')]
  return spawnPeer(t, 'ffmpeg', [
    '-hide_banner', '-nostdin', '-loglevel', 'error', '-re',
    '-f', 'lavfi', '-i', `sine=frequency=440:sample_rate=8000:duration=${seconds}`,
    '-c:a', 'pcm_mulaw', '-ac', '1',
    '-cname', cname, '-rtpflags', 'send_bye',
    '-f', 'rtp', ...keys, `${srtp === null ? 'rtp' : 'srtp'}://${HOST}:${rtpPort}?rtcpport=${rtcpPort}&pkt_size=172`
  ])
}

const GST_ELEMENTS = ['rtpbin', 'udpsrc', 'udpsink', 'rtppcmudepay']

/**
 * GStreamer rtpbin receiving PCMU RTP on rtpPort and RTCP on rtcpInPort,
 * sending its receiver reports to rtcpOutPort. The AVPF profile lets it
 * report early instead of after RFC 3550's 5 s minimum interval.
 * Resolves once the pipeline is going to PLAYING (its sockets are bound).
 */
async function startGstReceiver (t, { rtpPort, rtcpInPort, rtcpOutPort }) {
  requireBinary('gst-launch-1.0', 'gstreamer1.0-tools')
  await requireGstElements(GST_ELEMENTS, 'gstreamer1.0-plugins-good')
  const peer = spawnPeer(t, 'gst-launch-1.0', [
    '-e', 'rtpbin', 'name=rb', 'rtp-profile=avpf',
    'udpsrc', `address=${HOST}`, `port=${rtpPort}`,
    'caps=application/x-rtp,media=audio,clock-rate=8000,encoding-name=PCMU,payload=0', '!', 'rb.recv_rtp_sink_0',
    'udpsrc', `address=${HOST}`, `port=${rtcpInPort}`, 'caps=application/x-rtcp', '!', 'rb.recv_rtcp_sink_0',
    'rb.send_rtcp_src_0', '!', 'udpsink', `host=${HOST}`, `port=${rtcpOutPort}`, 'sync=false', 'async=false',
    'rb.', '!', 'rtppcmudepay', '!', 'fakesink'
  ])
  await peer.waitFor('PLAYING', 10000)
  return peer
}

/**
 * Ask a peer to stop (SIGINT: gst-launch -e sends EOS first), SIGKILL it
 * after `ms`; resolves with its exit.
 */
async function stopPeer (peer, ms = 3000) {
  const { child } = peer
  if (child.exitCode === null && child.signalCode === null) child.kill('SIGINT')
  const timer = setTimeout(() => child.kill('SIGKILL'), ms)
  const result = await peer.exited
  clearTimeout(timer)
  return result
}

module.exports = {
  HOST,
  requireBinary,
  requireGstElements,
  run,
  freeUdpPort,
  spawnPeer,
  startFfmpegSender,
  startGstReceiver,
  stopPeer
}
