'use strict'
// Runs `node bin/collector.js ...args` to completion, as an operator's shell
// does: `{ code, stdout, stderr, ms }`; or `collector calls --serve` until the test ends.
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

/** The CLI serving the view: resolves with its URL once it says where. */
async function serveView (t, env, args) {
  const child = spawn(process.execPath, [CLI, 'calls', ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] })
  t.after(() => child.exitCode === null && child.kill('SIGKILL'))
  let stdout = ''
  let stderr = ''
  child.stderr.on('data', (d) => { stderr += d })
  const url = await new Promise((resolve, reject) => {
    child.stdout.on('data', (d) => {
      stdout += d
      const m = /serving the calls at (\S+) /.exec(stdout)
      if (m) resolve(m[1])
    })
    child.on('exit', (code) => reject(new Error(`collector calls --serve exited ${code}: ${stderr}`)))
  })
  const stop = async () => {
    const exited = new Promise((resolve) => child.once('exit', (code) => resolve(code)))
    child.kill('SIGTERM')
    return exited
  }
  return { url, stop, stdout: () => stdout, stderr: () => stderr }
}

module.exports = { runCli, serveView, CLI }
