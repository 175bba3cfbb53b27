'use strict'
// A real rsyslogd (Debian's, with its gtls/ossl stream drivers) as a TLS
// syslog sender: its own config, pid file and work directory, in the
// foreground, taking messages on a loopback UDP port (imudp) and forwarding
// them with omfwd over TLS. Killed by t.after.
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const dgram = require('node:dgram')
const { spawn } = require('node:child_process')
const { waitFor } = require('./wait-for')
const { removeDir } = require('./temp-dir')

const MODULE_DIRS = ['/usr/lib/x86_64-linux-gnu/rsyslog', '/usr/lib/aarch64-linux-gnu/rsyslog', '/usr/lib/rsyslog']

/** Whether rsyslogd and its `driver` ('gtls' or 'ossl') stream driver are installed. */
function rsyslogAvailable (driver) {
  return MODULE_DIRS.some((dir) => fs.existsSync(path.join(dir, `lmnsd_${driver}.so`))) &&
    ['/usr/sbin/rsyslogd', '/sbin/rsyslogd'].some((file) => fs.existsSync(file))
}

async function freeUdpPort () {
  const socket = dgram.createSocket('udp4')
  await new Promise((resolve) => socket.bind(0, '127.0.0.1', resolve))
  const { port } = socket.address()
  await new Promise((resolve) => socket.close(resolve))
  return port
}

// Whether a UDP socket is bound to `port` (/proc/net/udp, hex ports).
function udpBound (port) {
  const hex = `:${port.toString(16).toUpperCase().padStart(4, '0')}`
  return fs.readFileSync('/proc/net/udp', 'utf8').split('\n').some((line) => (line.trim().split(/\s+/)[1] || '').endsWith(hex))
}

/**
 * Starts rsyslogd forwarding what it receives on `udpPort` to
 * `127.0.0.1:targetPort` over TLS. `tls`: `{ driver, authMode, permittedPeers, ca, cert, key }`.
 * Resolves once its UDP input is bound: `{ udpPort, output() }`.
 */
async function startRsyslog (t, targetPort, { driver = 'gtls', authMode = 'x509/name', permittedPeers = 'localhost', ca, cert, key } = {}) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rsyslog-'))
  t.after(() => removeDir(dir))
  fs.mkdirSync(path.join(dir, 'work'))
  const udpPort = await freeUdpPort()
  const files = [ca && `DefaultNetstreamDriverCAFile="${ca}"`, cert && `DefaultNetstreamDriverCertFile="${cert}"`, key && `DefaultNetstreamDriverKeyFile="${key}"`].filter(Boolean)
  const conf = path.join(dir, 'rsyslog.conf')
  fs.writeFileSync(conf, [
    `global(workDirectory="${path.join(dir, 'work')}" ${files.join(' ')})`,
    'module(load="imudp")',
    `input(type="imudp" address="127.0.0.1" port="${udpPort}")`,
    `action(type="omfwd" target="127.0.0.1" port="${targetPort}" protocol="tcp" TCP_Framing="octet-counted"`,
    `  StreamDriver="${driver}" StreamDriverMode="1" StreamDriverAuthMode="${authMode}"`,
    `  ${permittedPeers ? `StreamDriverPermittedPeers="${permittedPeers}"` : ''} template="RSYSLOG_SyslogProtocol23Format")`
  ].join('\n') + '\n')
  const child = spawn('rsyslogd', ['-n', '-f', conf, '-i', path.join(dir, 'rsyslogd.pid')], { stdio: ['ignore', 'pipe', 'pipe'] })
  let output = ''
  child.stdout.on('data', (d) => { output += d })
  child.stderr.on('data', (d) => { output += d })
  const exited = new Promise((resolve) => child.on('exit', resolve))
  t.after(() => { child.kill('SIGTERM'); return exited })
  await Promise.race([
    waitFor(() => udpBound(udpPort), { what: 'rsyslogd to bind its UDP input', timeout: 15000 }),
    exited.then((code) => { throw new Error(`rsyslogd exited (${code}): ${output}`) })
  ])
  return { udpPort, output: () => output }
}

module.exports = { startRsyslog, rsyslogAvailable }
