'use strict'
// Stand-in mongods (test/fixtures/fake-mongod.js) where the embedded
// database looks for one (PATH, MONGOMS_SYSTEM_BINARY,
// mongodb-memory-server's cache) or fetches one (an archive on a local
// HTTP server that MONGOMS_DOWNLOAD_URL names), and networks that fail:
// a server that resets every connection, one that never answers.

const crypto = require('node:crypto')
const fs = require('node:fs')
const http = require('node:http')
const net = require('node:net')
const path = require('node:path')
const { execFileSync } = require('node:child_process')
const { tempDir: sharedTempDir } = require('./temp-dir')

const FIXTURE = path.join(__dirname, '..', 'fixtures', 'fake-mongod.js')

function shellQuote (text) {
  return `'${String(text).replace(/'/g, "'\\''")}'`
}

/** A temporary directory, removed after the test. */
function tempDir (t, prefix = 'collector-choice-') {
  return sharedTempDir(t, prefix)
}

/**
 * Writes an executable `name` in `dir` that runs the fake mongod, whatever
 * PATH it is started with (the fake itself runs on the Java server).
 * @param {string} dir created if missing
 * @param {string} [name='mongod']
 * @param {{ version?: string, script?: string }} [options] script: a shell body instead (a mongod that does not run)
 * @returns {string} its path
 */
function installFakeMongod (dir, name = 'mongod', { version = '8.2.6', script } = {}) {
  fs.mkdirSync(dir, { recursive: true })
  const file = path.join(dir, name)
  const body = script || `PATH=${shellQuote(process.env.PATH)} FAKE_MONGOD_VERSION=${shellQuote(version)} exec ${shellQuote(process.execPath)} ${shellQuote(FIXTURE)} "$@"`
  fs.writeFileSync(file, `#!/bin/sh\n${body}\n`, { mode: 0o755 })
  return file
}

/**
 * A directory holding only a link to this machine's `java`: a PATH with the
 * Java server's runtime and nothing else (the launcher is built already).
 */
function javaOnlyDir (t) {
  const java = execFileSync('sh', ['-c', 'command -v java'], { encoding: 'utf8' }).trim()
  const dir = tempDir(t, 'collector-java-')
  fs.symlinkSync(java, path.join(dir, 'java'))
  return dir
}

/**
 * A mongod archive as MongoDB publishes them, `<name>.tgz` holding
 * `<name>/bin/mongod` (the fake), and the MD5 that is published beside it.
 * @returns {{ name: string, body: Buffer, md5: string }}
 */
function mongodArchive (dir, { version = '8.2.6', name = `mongodb-linux-x86_64-debian12-${version}` } = {}) {
  const binary = installFakeMongod(path.join(dir, name, 'bin'), 'mongod', { version })
  // Some size, as a real mongod has (after the exec line: never read).
  // mongodb-memory-server's extraction resolves when the archive is read,
  // and checks the binary at once: a file of a few hundred bytes, whose
  // write stream had not opened yet, was reported missing in a loaded CI run.
  fs.appendFileSync(binary, `# ${'0'.repeat(4 << 20)}\n`)
  const file = path.join(dir, `${name}.tgz`)
  execFileSync('tar', ['-czf', file, '-C', dir, name])
  const body = fs.readFileSync(file)
  return { name: `${name}.tgz`, body, md5: crypto.createHash('md5').update(body).digest('hex') }
}

/**
 * An HTTP server on 127.0.0.1 serving `files` (path → Buffer|string);
 * `requests` lists the paths asked for, in order.
 * @returns {Promise<{ url: (file: string) => string, requests: string[] }>}
 */
async function serveFiles (t, files) {
  const requests = []
  const server = http.createServer((req, res) => {
    requests.push(req.url)
    const body = files[req.url]
    if (body === undefined) {
      res.writeHead(404).end()
      return
    }
    res.writeHead(200, { 'content-length': Buffer.byteLength(body) }).end(body)
  })
  await listen(t, server)
  return { url: (file) => `http://127.0.0.1:${server.address().port}/${file}`, requests }
}

/**
 * A TCP server on 127.0.0.1 that does to each connection what `mode` says:
 * 'reset' closes it at once (a closed network), 'silent' holds it and
 * never answers (a stalled one). `connections` counts them.
 */
async function badServer (t, mode) {
  const state = { connections: 0 }
  const held = new Set()
  const server = net.createServer((socket) => {
    state.connections++
    if (mode === 'reset') return socket.resetAndDestroy()
    held.add(socket)
    socket.on('error', () => {})
    socket.on('close', () => held.delete(socket))
  })
  await listen(t, server, () => { for (const socket of held) socket.destroy() })
  state.url = (file) => `http://127.0.0.1:${server.address().port}/${file}`
  return state
}

async function listen (t, server, beforeClose = () => {}) {
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.after(() => {
    beforeClose()
    server.closeAllConnections?.()
    return new Promise((resolve) => server.close(() => resolve()))
  })
}

module.exports = { installFakeMongod, javaOnlyDir, mongodArchive, serveFiles, badServer, tempDir }
