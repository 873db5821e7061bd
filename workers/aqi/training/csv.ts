/** Minimal RFC 4180 CSV reader (quoted fields, doubled quotes, CRLF), enough for the CPCB and Kaggle files. */

export function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let field = "";
  let inQuotes = false;
  // Strip a UTF-8 byte-order mark: rohanrao_stations.csv starts with one.
  const source = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  for (let index = 0; index < source.length; index += 1) {
    const char = source[index];
    if (inQuotes) {
      if (char === '"') {
        if (source[index + 1] === '"') {
          field += '"';
          index += 1;
        } else {
          inQuotes = false;
        }
      } else {
        field += char;
      }
    } else if (char === '"') {
      inQuotes = true;
    } else if (char === ",") {
      row.push(field);
      field = "";
    } else if (char === "\n" || char === "\r") {
      if (char === "\r" && source[index + 1] === "\n") index += 1;
      row.push(field);
      rows.push(row);
      row = [];
      field = "";
    } else {
      field += char;
    }
  }
  if (field.length > 0 || row.length > 0) {
    row.push(field);
    rows.push(row);
  }
  return rows.filter((cells) => cells.length > 1 || cells[0] !== "");
}

/** Rows as objects keyed by the header line. */
export function parseCsvRecords(text: string): Record<string, string>[] {
  const [header, ...body] = parseCsv(text);
  if (header === undefined) return [];
  return body.map((cells) => {
    const record: Record<string, string> = {};
    header.forEach((name, column) => {
      record[name.trim()] = (cells[column] ?? "").trim();
    });
    return record;
  });
}

/** A record's cell, "" when the column is absent. */
export function cell(record: Readonly<Record<string, string>>, column: string): string {
  return record[column] ?? "";
}

/** A number, or null for an empty / "None" / "NA" / non-numeric cell. */
export function parseOptionalNumber(cell: string | undefined): number | null {
  if (cell === undefined) return null;
  const trimmed = cell.trim();
  if (trimmed === "" || /^(none|nan|na|null)$/i.test(trimmed)) return null;
  const value = Number(trimmed);
  return Number.isFinite(value) ? value : null;
}

export function csvField(value: string | number | null): string {
  if (value === null) return "";
  if (typeof value === "number") return Number.isNaN(value) ? "nan" : String(value);
  return /[",\n\r]/.test(value) ? `"${value.replace(/"/g, '""')}"` : value;
}
