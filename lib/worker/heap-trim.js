'use strict'

const { TRIM_OUTPUT } = require('../../native/build')

/*
 * A worker gives its freed malloc memory back to the system every
 * TRIM_INTERVAL_MS, through glibc's malloc_trim(0) (native/malloc_trim.c):
 * it releases the free pages inside malloc's heaps, where glibc on its own
 * only gives back what is free at a heap's top. A worker storing tens of
 * thousands of messages a second frees batch buffers and insert commands
 * (64–512 KiB) in an order that leaves such holes, and its resident set grew
 * by them: at 40,000 syslog lines/s the collector's peak is 0.95× what it was, for no
 * measurable CPU (docs/benchmarks.md, Syslog collector against syslog-ng).
 * Where the addon is not built (no compiler, not glibc) nothing is trimmed.
 */
const TRIM_INTERVAL_MS = 250

let addon
function load () {
  if (addon === undefined) {
    try {
      addon = require(TRIM_OUTPUT)
    } catch {
      addon = null
    }
  }
  return addon
}

/** Whether this process can trim (the addon is built and loads). */
function canTrim () {
  return load() !== null
}

/** Gives freed malloc memory back now; true when some was, false when none was or it cannot. */
function trimNow () {
  const trimmer = load()
  return trimmer !== null && trimmer.trim()
}

/** Trims every TRIM_INTERVAL_MS for the life of the process (the timer never keeps it alive). */
function startHeapTrim () {
  if (canTrim()) setInterval(trimNow, TRIM_INTERVAL_MS).unref()
}

module.exports = { startHeapTrim, trimNow, canTrim }
