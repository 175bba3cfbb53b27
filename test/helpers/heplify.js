'use strict'

// heplify (sipcapture's capture agent, Go, AGPL: run as a program, never
// copied in), built once from the Go module proxy at a pinned version into
// the user's cache. `go install module@version` asks the proxy for the
// module's version list, which the proxy here refuses; the module itself
// downloads, so it is built from the module cache (its own go.sum). Needs
// Go, and libpcap's and LuaJIT's headers (Debian libpcap-dev,
// libluajit-5.1-dev: .ci/run installs them).

const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { execFileSync } = require('node:child_process')

const VERSION = 'v1.67.1'
const MODULE = 'github.com/sipcapture/heplify'

function cacheDir () {
  return path.join(process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache'), 'collector-cluster', `heplify-${VERSION}`)
}

/** The path of a heplify binary, built first if it is not there yet; throws with the build's output when it cannot be. */
function heplifyBinary () {
  const binary = path.join(cacheDir(), 'heplify')
  if (fs.existsSync(binary)) return binary
  const { Dir } = JSON.parse(execFileSync('go', ['mod', 'download', '-json', `${MODULE}@${VERSION}`], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }))
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'heplify-build-'))
  try {
    fs.cpSync(Dir, work, { recursive: true })
    execFileSync('chmod', ['-R', 'u+w', work]) // the module cache's files are read-only
    fs.mkdirSync(cacheDir(), { recursive: true })
    const partial = `${binary}.${process.pid}`
    execFileSync('go', ['build', '-mod=mod', '-o', partial, '.'], { cwd: work, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, GOFLAGS: '-mod=mod' } })
    fs.renameSync(partial, binary)
  } finally {
    fs.rmSync(work, { recursive: true, force: true })
  }
  return binary
}

module.exports = { heplifyBinary, HEPLIFY_VERSION: VERSION }

if (require.main === module) console.log(heplifyBinary())
