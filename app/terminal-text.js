'use strict'

// Text that came from senders or from the database, made safe to print on a
// person's terminal. A terminal acts on control characters instead of
// showing them: ESC starts sequences that retitle the window, move the
// cursor or erase a line; CR returns to the line's start, so a sender's text
// can overwrite ours with a fake line; bidi overrides and zero-width
// characters make text read as other text. Each such character is shown as
// escape text instead, so what a sender sent is what the operator reads.

// The one list of what never reaches a terminal raw: Cc (C0, DEL, C1), Cf
// (bidi embeddings, overrides, isolates and marks, zero-width characters,
// the soft hyphen, BOM, tag characters), Zl and Zp (U+2028, U+2029: line
// breaks to some terminals), Cs (a lone surrogate is not text), what
// Unicode says to draw as nothing (Default_Ignorable_Code_Point: also the
// Hangul fillers, variation selectors and the code points reserved for
// future invisible ones); and the backslash, which starts our escapes.
const ESCAPED = /[\\\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}\p{Default_Ignorable_Code_Point}]/gu
const SHORT = { '\\': '\\\\', '\n': '\\n', '\r': '\\r', '\t': '\\t' }

// Two columns: East Asian wide and fullwidth characters (their common
// ranges: Hangul Jamo, CJK, kana, Hangul syllables, fullwidth forms) and
// emoji; none: combining marks; one: everything else printable.
const WIDE = /[\p{Emoji_Presentation}\u1100-\u115f\u2e80-\u303e\u3041-\u33ff\u3400-\u4dbf\u4e00-\u9fff\ua000-\ua4cf\uac00-\ud7a3\uf900-\ufaff\ufe30-\ufe4f\uff00-\uff60\uffe0-\uffe6\u{20000}-\u{3fffd}]/u
const ZERO_WIDTH = /[\p{Mn}\p{Me}]/u

/**
 * `text` with each character a terminal would act on, or would not show,
 * written as visible escape text: `\x1b`, `\r`, `\n`, `\t`, `\x9b`,
 * `\u202e`, `\u{e0041}`. A backslash shows as `\\`, so escape text a sender
 * typed is told apart from a character we escaped.
 * @param {*} text
 * @returns {string}
 */
function printable (text) {
  return String(text).replace(ESCAPED, escapeOne)
}

/**
 * `text` as a page shows it (the calls view, before HTML escaping): what
 * printable() escapes (bidi overrides that reverse the text around them,
 * invisible characters, controls) as the same escape text, but line
 * breaks, tabs and backslashes, which a page does not act on: a raw SIP
 * message keeps its lines.
 * @param {*} text
 * @returns {string}
 */
function visibleOnPage (text) {
  return String(text).replace(ESCAPED, (c) => c === '\n' || c === '\r' || c === '\t' || c === '\\' ? c : escapeOne(c))
}

function escapeOne (c) {
  if (SHORT[c]) return SHORT[c]
  const code = c.codePointAt(0)
  if (code < 0x100) return `\\x${hex(code, 2)}`
  return code > 0xffff ? `\\u{${hex(code, 1)}}` : `\\u${hex(code, 4)}`
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

function hex (code, digits) {
  return code.toString(16).padStart(digits, '0')
}

module.exports = { printable, printableJson, visibleOnPage, displayWidth, clipWidth }
