/** Summary statistics and a plain-text table for the benchmark scripts. */

/** The q-quantile (0..1) by linear interpolation between ranks; non-finite values are ignored. */
export function quantile(values: number[], q: number): number {
  const sorted = values.filter((value) => Number.isFinite(value)).sort((a, b) => a - b);
  if (sorted.length === 0) return Number.NaN;
  const position = (sorted.length - 1) * q;
  const low = Math.floor(position);
  const high = Math.ceil(position);
  return sorted[low]! + (sorted[high]! - sorted[low]!) * (position - low);
}

/**
 * A left-aligned first column, right-aligned figures (or every column left-aligned,
 * for text), and a rule under the header.
 */
export function table(
  headers: string[],
  rows: (string | number)[][],
  align: "figures" | "text" = "figures",
): string {
  const cells = [headers, ...rows.map((row) => row.map(String))];
  const widths = headers.map((_, column) =>
    Math.max(...cells.map((row) => (row[column] ?? "").length)),
  );
  const line = (row: string[]) =>
    row
      .map((cell, column) =>
        column === 0 || align === "text"
          ? cell.padEnd(widths[column]!)
          : cell.padStart(widths[column]!),
      )
      .join("  ")
      .trimEnd();
  return [
    line(cells[0]!),
    widths.map((width) => "-".repeat(width)).join("  "),
    ...cells.slice(1).map(line),
  ].join("\n");
}
