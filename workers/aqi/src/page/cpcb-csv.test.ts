import { describe, expect, it } from "vitest";
import { csvRecords, parseCpcbCsv, parseHour } from "./cpcb-csv.ts";
import chandniChowkWinter from "./samples/chandni-chowk-2022-01-19.csv";
import lodhiRoadMonsoon from "./samples/lodhi-road-2022-07-21.csv";

const HEADER =
  "From Date,To Date,PM2.5 (ug/m3),PM10 (ug/m3),NO2 (ug/m3),CO (mg/m3),Ozone (ug/m3),RH (%),WS (m/s),AT (degree C)";

function csv(...rows: string[]): string {
  return [HEADER, ...rows].join("\n");
}

function ok(text: string) {
  const result = parseCpcbCsv(text);
  if (!result.ok) throw new Error(result.errors.join("\n"));
  return result.value;
}

function errors(text: string): string[] {
  const result = parseCpcbCsv(text);
  if (result.ok) throw new Error("expected the CSV to be refused");
  return result.errors;
}

describe("CPCB CSV to recent_hours", () => {
  it("counts hours back from the hour after the newest reading, newest first, in the API's fields", () => {
    const value = ok(
      csv(
        "2022-01-19 05:00:00,2022-01-19 06:00:00,100.5,200,40,1.2,30,80,1.5,12",
        "2022-01-19 07:00:00,2022-01-19 08:00:00,110,210,,1.4,,82,2,11.5",
        "2022-01-19 06:00:00,2022-01-19 07:00:00,105,205,41,1.3,31,81,,",
      ),
    );
    expect(value.recentHours).toEqual([
      { hours_before: 1, pm25: 110, pm10: 210, co: 1.4 },
      { hours_before: 2, pm25: 105, pm10: 205, no2: 41, co: 1.3, o3: 31 },
      { hours_before: 3, pm25: 100.5, pm10: 200, no2: 40, co: 1.2, o3: 30 },
    ]);
    expect(value.lines).toEqual([3, 4, 2]);
    expect(value.newestHourStart).toBe("2022-01-19T07:00");
    // Wind speed comes in m/s; the API takes km/h.
    expect(value.weather).toEqual({ temperature: 11.5, humidity: 82, wind_speed: 7.2 });
    expect(value.skipped).toEqual({ empty: 0, older: 0 });
  });

  it("reads column names without units, quoted fields, CRLF, a BOM and CPCB's day-first dates", () => {
    const text =
      '\uFEFF"From Date","PM2.5","PM10","NO2","Ozone"\r\n"19-01-2022 07:00","110","210","40","30"\r\n"19-01-2022 06:00","None","NA","41",""\r\n';
    expect(ok(text).recentHours).toEqual([
      { hours_before: 1, pm25: 110, pm10: 210, no2: 40, o3: 30 },
      { hours_before: 2, no2: 41 },
    ]);
  });

  it("leaves out hours without any pollutant and hours more than 72 before the first forecast hour", () => {
    const rows = Array.from({ length: 80 }, (_, i) => {
      const at = new Date(Date.UTC(2022, 0, 10, 0) + i * 3_600_000).toISOString();
      const time = `${at.slice(0, 10)} ${at.slice(11, 19)}`;
      return i === 79 ? `${time},,,,,,,,,` : `${time},,${100 + i},,,,,,,`;
    });
    const value = ok(csv(...rows));
    expect(value.skipped).toEqual({ empty: 1, older: 7 });
    expect(value.recentHours).toHaveLength(72);
    expect(value.recentHours[0]).toEqual({ hours_before: 1, pm25: 178 });
    expect(value.recentHours.at(-1)).toEqual({ hours_before: 72, pm25: 107 });
  });

  it("reads the shipped samples: 72 hourly readings before 08:00", () => {
    const winter = ok(chandniChowkWinter);
    expect(winter.recentHours).toHaveLength(72);
    expect(winter.newestHourStart).toBe("2022-01-19T07:00");
    expect(winter.recentHours[0]).toMatchObject({ hours_before: 1, pm25: 111.58, pm10: 281.38 });
    expect(winter.weather).toEqual({ temperature: 11.95, humidity: 81.21, wind_speed: 2.12 });
    // Lodhi Road's AT column is empty: no temperature.
    expect(ok(lodhiRoadMonsoon).weather.temperature).toBeUndefined();
  });

  it("says which column is missing", () => {
    expect(errors("Date,PM2.5\n2022-01-19 07:00,100")[0]).toMatch(
      /^the first line has no "From Date" column: it should be the header of a CPCB export/,
    );
    expect(errors("From Date,To Date,RH (%)\n2022-01-19 07:00,2022-01-19 08:00,80")).toEqual([
      "the first line names no pollutant column: expected some of PM2.5, PM10, NO2, SO2, NH3, CO, Ozone (with or without their units)",
    ]);
    expect(errors("")).toEqual(["the CSV is empty"]);
    expect(errors(HEADER)).toEqual(["the CSV has a header but no readings"]);
  });

  it("names the line, column and text of a bad number or time, and counts what it does not list", () => {
    expect(
      errors(
        csv(
          "2022-01-19 07:00:00,2022-01-19 08:00:00,12,5,40,1.2,30,80,1.5,12",
          "2022-01-19 06:00:00,2022-01-19 07:00:00,abc,200,40,1.2,30,80,1.5,12",
          "2022-01-19 05:30:00,2022-01-19 06:30:00,100,200,40,1.2,30,80,1.5,12",
          "yesterday,,100,200,40,1.2,30,80,1.5,12",
        ),
      ),
    ).toEqual([
      'line 3, PM2.5 (ug/m3): "abc" is not a number',
      'line 4, From Date: "2022-01-19 05:30:00" does not start on a whole hour; hourly readings start at :00',
      'line 5, From Date: "yesterday" is not a date and time such as 2022-01-19 07:00:00',
    ]);
    const many = Array.from({ length: 8 }, (_, i) => `2022-01-19 0${i}:00:00,,x${i},,,,,,,`);
    expect(errors(csv(...many))).toEqual([
      'line 2, PM2.5 (ug/m3): "x0" is not a number',
      'line 3, PM2.5 (ug/m3): "x1" is not a number',
      'line 4, PM2.5 (ug/m3): "x2" is not a number',
      'line 5, PM2.5 (ug/m3): "x3" is not a number',
      'line 6, PM2.5 (ug/m3): "x4" is not a number',
      "and 3 more problems",
    ]);
  });

  it("refuses a repeated hour, a pollutant in another unit and a file without any value", () => {
    expect(
      errors(csv("2022-01-19 07:00:00,,100,,,,,,,", "2022-01-19 07:00:00,,101,,,,,,,")),
    ).toEqual(["line 3 repeats the hour 2022-01-19 07:00 of line 2"]);
    expect(errors("From Date,CO (ug/m3)\n2022-01-19 07:00,1200")).toEqual([
      'the column "CO (ug/m3)" is in ug/m3; the forecast takes CO in mg/m3, as CPCB exports it',
    ]);
    expect(errors(csv("2022-01-19 07:00:00,,,,,,,80,1,12"))).toEqual([
      "no line has a pollutant value: every pollutant cell is empty",
    ]);
  });

  it("keeps negative and out-of-range numbers for the API to judge", () => {
    expect(ok(csv("2022-01-19 07:00:00,,-5,9999,,,,,,")).recentHours).toEqual([
      { hours_before: 1, pm25: -5, pm10: 9999 },
    ]);
  });
});

describe("CSV helpers", () => {
  it("splits quoted fields with commas, quotes and line breaks", () => {
    expect(csvRecords('a,"b,c","say ""hi"""\n1,"2\n3",4')).toEqual([
      ["a", "b,c", 'say "hi"'],
      ["1", "2\n3", "4"],
    ]);
  });

  it("reads an hour in the formats CPCB and browsers write, wall-clock time", () => {
    const ms = Date.UTC(2022, 0, 19, 7);
    expect(parseHour("2022-01-19 07:00:00")).toEqual({ ms });
    expect(parseHour("2022-01-19T07:00")).toEqual({ ms });
    expect(parseHour("19-01-2022 07:00")).toEqual({ ms });
    expect(parseHour("19/01/2022 07:00:00")).toEqual({ ms });
    expect(parseHour("2022-02-30 07:00")).toEqual({
      error: '"2022-02-30 07:00" is not a valid date and time',
    });
  });
});
