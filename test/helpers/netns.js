'use strict'

// Hosts for multi-host tests: Linux network namespaces joined by veth pairs,
// with private addresses this helper assigns. One namespace routes between
// the others (the balancer host), so every host reaches every other through
// it and nothing reaches the machine's own network. Everything made here is
// named with a per-run prefix and deleted by `destroy()`.
const { execFileSync, spawn } = require('node:child_process')

const fs = require('node:fs')

const IP = '/usr/sbin/ip'
const NFT = '/usr/sbin/nft'
const CONNTRACK = '/usr/sbin/conntrack'

function run (cmd, args, input) {
  return execFileSync(cmd, args, { input, encoding: 'utf8', stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'] })
}

/**
 * Why this machine cannot run namespace tests, or null when it can: needs
 * root (CAP_SYS_ADMIN, CAP_NET_ADMIN), iproute2, nftables in the kernel.
 */
function netnsUnavailable () {
  if (process.platform !== 'linux') return 'network namespaces are Linux only'
  if (typeof process.getuid === 'function' && process.getuid() !== 0) return 'network namespaces need root (run as root, as CI does)'
  for (const [tool, pkg] of [[IP, 'iproute2'], [NFT, 'nftables'], [CONNTRACK, 'conntrack']]) {
    try {
      fs.accessSync(tool, fs.constants.X_OK)
    } catch {
      return `${tool} is missing (install the ${pkg} package)`
    }
  }
  const probe = `ccprobe${process.pid}`
  try {
    run(IP, ['netns', 'add', probe])
  } catch (err) {
    return `cannot create a network namespace: ${firstLine(err)}`
  }
  try {
    run(IP, ['netns', 'exec', probe, NFT, '-f', '-'], 'table ip probe {\n  chain balance {\n    type nat hook prerouting priority dstnat;\n  }\n}\n')
    return null
  } catch (err) {
    return `nftables is unavailable (install the nftables package; the kernel needs nf_tables and NAT): ${firstLine(err)}`
  } finally {
    try { run(IP, ['netns', 'del', probe]) } catch {}
  }
}

function firstLine (err) {
  return String((err.stderr && err.stderr.toString()) || err.message).trim().split('\n')[0]
}

/**
 * A star of hosts around one router namespace. `addHost(name)` gives host
 * `name` the address `10.231.<n>.2/24` on a link whose router end is
 * `10.231.<n>.1`, its default route.
 */
class Lab {
  constructor () {
    this.prefix = `cc${process.pid % 100000}`
    this.namespaces = []
    this.hosts = new Map()
    this.router = this.namespace('lb')
    // /proc/sys/net is the namespace's own as seen from inside it.
    this.exec(this.router, ['sh', '-c', 'echo 1 > /proc/sys/net/ipv4/ip_forward'])
    this.exec(this.router, [IP, 'link', 'set', 'lo', 'up'])
  }

  namespace (short) {
    const name = `${this.prefix}${short}`
    try { run(IP, ['netns', 'del', name]) } catch {} // left by a killed run
    run(IP, ['netns', 'add', name])
    this.namespaces.push(name)
    return name
  }

  /** Adds host `short` on subnet n; returns `{ ns, address, gateway }`. */
  addHost (short, n) {
    const ns = this.namespace(short)
    const outer = `${this.prefix}${short}`.slice(0, 15)
    run(IP, ['link', 'add', outer, 'netns', this.router, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', ns])
    const gateway = `10.231.${n}.1`
    const address = `10.231.${n}.2`
    this.exec(this.router, [IP, 'addr', 'add', `${gateway}/24`, 'dev', outer])
    this.exec(this.router, [IP, 'link', 'set', outer, 'up'])
    this.exec(ns, [IP, 'link', 'set', 'lo', 'up'])
    this.exec(ns, [IP, 'addr', 'add', `${address}/24`, 'dev', 'eth0'])
    this.exec(ns, [IP, 'link', 'set', 'eth0', 'up'])
    this.exec(ns, [IP, 'route', 'add', 'default', 'via', gateway])
    const host = { name: short, ns, address, gateway }
    this.hosts.set(short, host)
    return host
  }

  /** Runs a command in namespace `ns` to completion; returns its stdout. */
  exec (ns, args, input) {
    return run(IP, ['netns', 'exec', ns, ...args], input)
  }

  /** Forgets the router's connection tracking (and so its NAT decisions). */
  flushConntrack () {
    this.exec(this.router, [CONNTRACK, '-F'])
  }

  /** Loads an nftables ruleset (text) into the router. */
  nft (ruleset) {
    this.exec(this.router, [NFT, '-f', '-'], ruleset)
  }

  /** The router's named nftables counters: `{ name: packets }`. */
  counters (table) {
    const out = JSON.parse(this.exec(this.router, [NFT, '-j', 'list', 'counters', 'table', 'ip', table]))
    const counts = {}
    for (const item of out.nftables) if (item.counter) counts[item.counter.name] = item.counter.packets
    return counts
  }

  /** Starts `args` in namespace `ns` (a process group of its own). */
  spawn (ns, args, options = {}) {
    return spawn(IP, ['netns', 'exec', ns, ...args], { stdio: ['ignore', 'pipe', 'pipe'], detached: true, ...options })
  }

  /** The wrapper that runs a command inside namespace `ns`. */
  wrapper (ns) {
    return [IP, 'netns', 'exec', ns]
  }

  destroy () {
    for (const ns of this.namespaces.reverse()) {
      try { run(IP, ['netns', 'del', ns]) } catch {}
    }
    this.namespaces = []
  }
}

module.exports = { Lab, netnsUnavailable }
