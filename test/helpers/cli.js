'use strict'
// Runs `node bin/collector.js ...args` to completion, as an operator's shell
// does: `{ code, stdout, stderr, ms }`.
const path = require('node:path')
const { spawn } = require('node:child_process')

const CLI = path.join(__dirname, '..', '..', 'bin', 'collector.js')

function runCli (env, ...args) {
  const child = spawn(process.execPath, [CLI, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (d) => { stdout += d })
  child.stderr.on('data', (d) => { stderr += d })
  const started = Date.now()
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr, ms: Date.now() - started })))
}

module.exports = { runCli, CLI }
