// Decoding a JSON document that is still arriving: tool arguments stream in as pieces of JSON text, and
// the page shows the script (the `code` string, or the `edits`) while the model is still writing it.
// Returns the value as far as it is known: an unterminated string is returned as decoded so far, an
// unterminated object or array with the members read so far. Never throws.

export function parsePartialJson(text) {
  const parser = new PartialParser(text || "");
  try {
    return parser.value();
  } catch {
    return undefined;
  }
}

class Incomplete extends Error {}

class PartialParser {
  constructor(text) {
    this.text = text;
    this.pos = 0;
  }

  skipSpace() {
    while (this.pos < this.text.length && " \t\n\r".includes(this.text[this.pos])) this.pos++;
  }

  value() {
    this.skipSpace();
    if (this.pos >= this.text.length) throw new Incomplete();
    const c = this.text[this.pos];
    if (c === "{") return this.object();
    if (c === "[") return this.array();
    if (c === '"') return this.string().value;
    return this.literal();
  }

  object() {
    const out = {};
    this.pos++;
    for (;;) {
      this.skipSpace();
      if (this.pos >= this.text.length) return out;
      if (this.text[this.pos] === "}") {
        this.pos++;
        return out;
      }
      if (this.text[this.pos] === ",") {
        this.pos++;
        continue;
      }
      if (this.text[this.pos] !== '"') throw new SyntaxError("expected a key");
      const key = this.string();
      if (!key.complete) return out;
      this.skipSpace();
      if (this.text[this.pos] !== ":") return out;
      this.pos++;
      try {
        out[key.value] = this.value();
      } catch (error) {
        if (error instanceof Incomplete) return out;
        throw error;
      }
    }
  }

  array() {
    const out = [];
    this.pos++;
    for (;;) {
      this.skipSpace();
      if (this.pos >= this.text.length) return out;
      if (this.text[this.pos] === "]") {
        this.pos++;
        return out;
      }
      if (this.text[this.pos] === ",") {
        this.pos++;
        continue;
      }
      try {
        out.push(this.value());
      } catch (error) {
        if (error instanceof Incomplete) return out;
        throw error;
      }
    }
  }

  string() {
    let out = "";
    this.pos++;
    const text = this.text;
    while (this.pos < text.length) {
      const c = text[this.pos];
      if (c === '"') {
        this.pos++;
        return { value: out, complete: true };
      }
      if (c !== "\\") {
        const next = text.indexOf('"', this.pos);
        const slash = text.indexOf("\\", this.pos);
        let stop = Math.min(next < 0 ? text.length : next, slash < 0 ? text.length : slash);
        out += text.slice(this.pos, stop);
        this.pos = stop;
        continue;
      }
      if (this.pos + 1 >= text.length) break; // a lone backslash: wait for the rest of the escape
      const e = text[this.pos + 1];
      if (e === "u") {
        const hex = text.slice(this.pos + 2, this.pos + 6);
        if (hex.length < 4) break;
        out += String.fromCharCode(parseInt(hex, 16));
        this.pos += 6;
        continue;
      }
      out += { n: "\n", t: "\t", r: "\r", b: "\b", f: "\f", '"': '"', "\\": "\\", "/": "/" }[e] ?? e;
      this.pos += 2;
    }
    this.pos = text.length;
    return { value: out, complete: false };
  }

  literal() {
    const match = /^(true|false|null|-?\d+(\.\d+)?([eE][+-]?\d+)?)/.exec(this.text.slice(this.pos));
    if (!match) {
      if (/^(t|tr|tru|f|fa|fal|fals|n|nu|nul|-)?$/.test(this.text.slice(this.pos).trim())) throw new Incomplete();
      throw new SyntaxError("unexpected token");
    }
    this.pos += match[0].length;
    return JSON.parse(match[0]);
  }
}
