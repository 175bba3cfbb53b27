'use strict'

const { spawn } = require('node:child_process')
const path = require('node:path')
const { relayNpmShellSignals } = require('../npm-shell-signals')

/**
 * `collector demo [--streams N] [--rate R] [--duration 10s]`: the main job
 * (also `npm start`), run as a child with the terminal so Ctrl-C reaches it;
 * run by npx, a signal sent to npm alone is passed on to it
 * (app/npm-shell-signals.js).
 */
function run (argv) {
  const child = spawn(process.execPath, [path.join(__dirname, '..', '..', 'bin', 'demo.js'), ...argv], { stdio: 'inherit' })
  process.on('SIGINT', () => {}) // the child drains and reports; we wait for it
  relayNpmShellSignals({ raise: (signal) => child.kill(signal) })
  return new Promise((resolve) => child.on('exit', (code) => resolve(code === null ? 1 : code)))
}

module.exports = { run }
