'use strict'

const path = require('node:path')
const { spawnSync } = require('node:child_process')
const { fileURLToPath } = require('node:url')

/**
 * Where loading a module failed (a worker's, in lib/worker/load-worker.js; a
 * collector's, in app/collector-registry.js). A SyntaxError of a CommonJS
 * file: V8 puts `file:line` on the first line of the stack. A throw: the
 * first stack frame outside Node's internals and `ownDir` (the folder of
 * the code that loads the module). An
 * ES module's SyntaxError carries no location at all; `node --check` of the
 * module finds it when the fault is in the module itself.
 */
function whereFailed (err, modulePath, ownDir) {
  const lines = typeof err.stack === 'string' ? err.stack.split('\n') : []
  const compiled = err.name === 'SyntaxError' && /^(.+):(\d+)$/.exec(lines[0] || '')
  if (compiled) return { file: toPath(compiled[1]), line: Number(compiled[2]) }
  for (const line of lines) {
    const frame = /^\s+at (?:.* \()?(.+?):(\d+):\d+\)?$/.exec(line)
    if (!frame || frame[1].startsWith('node:')) continue
    const file = toPath(frame[1])
    if (path.dirname(file) !== ownDir) return { file, line: Number(frame[2]) }
  }
  return err.name === 'SyntaxError' ? checkSyntax(modulePath) : null
}

function checkSyntax (modulePath) {
  const result = spawnSync(process.execPath, ['--check', modulePath], { encoding: 'utf8', timeout: 10000 })
  const found = /^(.+):(\d+)$/m.exec(result.stderr || '')
  return result.status !== 0 && found ? { file: toPath(found[1]), line: Number(found[2]) } : null
}

function toPath (location) {
  return location.startsWith('file://') ? fileURLToPath(location) : location
}

module.exports = { whereFailed }
