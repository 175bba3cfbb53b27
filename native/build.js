#!/usr/bin/env node
'use strict'
// Builds the native addons with the C compiler and the headers that ship
// with Node itself, so it needs neither node-gyp nor a download. Runs on
// `npm install`. Each is optional: without a compiler or the headers the
// build is skipped with a note and the product works without it (slower per
// datagram, or a larger worker); `--required` makes that a failure, and a
// compiler warning too (CI uses it). The addons:
//   udp_receiver  the master's UDP receive path (recvmmsg), else node:dgram
//   malloc_trim   glibc's malloc_trim for the workers (lib/worker/heap-trim.js)
const fs = require('node:fs')
const path = require('node:path')
const { execFileSync } = require('node:child_process')

const SOURCE = path.join(__dirname, 'udp_receiver.c')
const OUTPUT = path.join(__dirname, 'build', 'udp_receiver.node')
const TRIM_SOURCE = path.join(__dirname, 'malloc_trim.c')
const TRIM_OUTPUT = path.join(__dirname, 'build', 'malloc_trim.node')

/** The Node version a header directory declares (node_version.h), or null. */
function headerVersion (dir) {
  let text
  try {
    text = fs.readFileSync(path.join(dir, 'node_version.h'), 'utf8')
  } catch {
    return null
  }
  const part = (name) => (text.match(new RegExp(`#define NODE_${name}_VERSION (\\d+)`)) || [])[1]
  const [major, minor, patch] = ['MAJOR', 'MINOR', 'PATCH'].map(part)
  return major ? `${major}.${minor}.${patch}` : null
}

/**
 * Header directories that have what the build needs, those of the running
 * Node first: npm exports `nodedir` from any npmrc (a machine-wide
 * `nodedir=/usr` names the system Node's headers), which must not win over
 * the headers shipped beside the Node that will load the addon.
 */
function headerDirs () {
  const prefix = path.resolve(path.dirname(process.execPath), '..')
  const candidates = [
    process.env.npm_config_nodedir && path.join(process.env.npm_config_nodedir, 'include', 'node'),
    path.join(prefix, 'include', 'node'),
    '/usr/include/node',
    '/usr/local/include/node'
  ].filter(Boolean)
  const usable = candidates.filter((dir) => fs.existsSync(path.join(dir, 'node_api.h')) && fs.existsSync(path.join(dir, 'uv.h')))
  const running = (dir) => headerVersion(dir) === process.versions.node
  return [...usable.filter(running), ...usable.filter((dir) => !running(dir))]
}

/** `strict` turns compiler warnings into errors (CI); an install only reports them. */
function build ({ strict = false } = {}) {
  if (process.platform !== 'linux') throw new Error(`the native receiver uses recvmmsg(2), which ${process.platform} does not have`)
  return buildAddon(SOURCE, OUTPUT, 'udp_receiver', strict)
}

/** The workers' malloc_trim (glibc only: elsewhere the compiler stops on the source's #error). */
function buildTrim ({ strict = false } = {}) {
  return buildAddon(TRIM_SOURCE, TRIM_OUTPUT, 'malloc_trim', strict)
}

function buildAddon (source, output, name, strict) {
  const [include] = headerDirs()
  if (!include) throw new Error('Node\'s C headers (node_api.h, uv.h) were not found next to the node binary')
  compile(source, output, [...(strict ? ['-Werror'] : []), '-shared', '-fPIC', '-fvisibility=hidden', `-DNODE_GYP_MODULE_NAME=${name}`, '-I', include])
  return { output, include, version: headerVersion(include) }
}

/** Compiles one C file to `output` (written whole or not at all). */
function compile (source, output, flags = []) {
  const compiler = process.env.CC || 'cc'
  fs.mkdirSync(path.dirname(output), { recursive: true })
  const temporary = `${output}.${process.pid}.tmp`
  execFileSync(compiler, ['-O2', '-std=gnu11', '-Wall', '-Wextra', ...flags, '-o', temporary, source], { stdio: ['ignore', 'inherit', 'inherit'] })
  fs.renameSync(temporary, output)
}

// Builds one addon and says so, or why not and what runs instead; false when not built.
function report (what, builder, strict, instead) {
  try {
    const { output, include, version } = builder({ strict })
    process.stdout.write(`collector-cluster: built the ${what} (${path.relative(process.cwd(), output) || output}, headers ${include} of Node ${version || 'unknown'}, running Node ${process.versions.node})\n`)
    return true
  } catch (err) {
    process.stderr.write(`collector-cluster: ${what} not built: ${err.message.split('\n')[0]}\ncollector-cluster: ${instead}\n`)
    return false
  }
}

if (require.main === module) {
  const required = process.argv.includes('--required')
  const receiver = report('native UDP receiver', build, required, 'UDP collectors will receive with node:dgram (udpReceiver "auto" falls back).')
  const trim = report('workers\' malloc_trim', buildTrim, required, 'workers run without it (their freed memory goes back to the system later).')
  if (required && !(receiver && trim)) process.exit(1)
}

module.exports = { build, buildTrim, compile, OUTPUT, TRIM_OUTPUT }
