'use strict'

// Text that came from senders or from the database, made safe to print on a
// person's terminal: the rules (what is escaped, and how) are
// lib/shared/printable-text.js's, which the logs use too.

const { printable, escapeOne, hex, ESCAPED } = require('../lib/shared/printable-text')

// Two columns: East Asian wide and fullwidth characters (their common
// ranges: Hangul Jamo, CJK, kana, Hangul syllables, fullwidth forms) and
// emoji; none: combining marks; one: everything else printable.
const WIDE = /[\p{Emoji_Presentation}\u1100-\u115f\u2e80-\u303e\u3041-\u33ff\u3400-\u4dbf\u4e00-\u9fff\ua000-\ua4cf\uac00-\ud7a3\uf900-\ufaff\ufe30-\ufe4f\uff00-\uff60\uffe0-\uffe6\u{20000}-\u{3fffd}]/u
const ZERO_WIDTH = /[\p{Mn}\p{Me}]/u

/**
 * A sender's raw text (a SIP message) as the calls view's page and its
 * text export show it: what printable() escapes (bidi overrides that
 * reverse the text around them, invisible characters, controls, a CR not
 * followed by LF, which a browser draws as a line break and a terminal
 * acts on) as the same escape text, but line breaks (LF, CR LF) and tabs:
 * a raw SIP message keeps its lines. Backslashes stay as they are in a
 * text with nothing to escape (a SIP display name's quoted pair reads as
 * sent), and are doubled in one with escapes, so that a sender's own
 * `\x1b` text is told apart from an ESC shown as escape text.
 * @param {*} text
 * @returns {string}
 */
function rawTextShown (text) {
  const string = String(text)
  const keep = (c, at) => c === '\n' || c === '\t' || (c === '\r' && string[at + 1] === '\n')
  let escapes = false
  const shown = string.replace(ESCAPED, (c, at) => {
    if (keep(c, at) || c === '\\') return c
    escapes = true
    return escapeOne(c)
  })
  return escapes ? string.replace(ESCAPED, (c, at) => keep(c, at) ? c : escapeOne(c)) : shown
}

/**
 * `JSON.stringify(value, null, space)` with DEL, C1, bidi, invisible format
 * characters and line separators as `\u` escapes, which JSON.stringify
 * leaves raw: the same JSON value to a program, nothing that acts on the
 * terminal of a person who reads it. (JSON.stringify escapes C0 in strings
 * itself; a raw one in its output is the indentation's line break.)
 * @param {*} value
 * @param {number} [space]
 * @returns {string}
 */
function printableJson (value, space) {
  return JSON.stringify(value, null, space).replace(ESCAPED, (c) => {
    if (c === '\\' || c < ' ') return c
    let units = ''
    for (let i = 0; i < c.length; i++) units += `\\u${hex(c.charCodeAt(i), 4)}`
    return units
  })
}

/**
 * How many columns a terminal gives printable text (printable's output):
 * wide East Asian characters and emoji take two, combining marks none.
 * @param {string} text
 * @returns {number}
 */
function displayWidth (text) {
  let width = 0
  for (const c of text) width += charWidth(c)
  return width
}

function charWidth (c) {
  return ZERO_WIDTH.test(c) ? 0 : WIDE.test(c) ? 2 : 1
}

/**
 * Printable text cut to `max` columns: a longer one keeps what fits in
 * max − 1 and ends with `…`.
 * @param {string} text printable's output
 * @param {number} max
 * @returns {string}
 */
function clipWidth (text, max) {
  if (displayWidth(text) <= max) return text
  let width = 0
  let kept = ''
  for (const c of text) {
    const w = charWidth(c)
    if (width + w > max - 1) break
    width += w
    kept += c
  }
  return kept + '…'
}

module.exports = { printable, printableJson, rawTextShown, displayWidth, clipWidth }
