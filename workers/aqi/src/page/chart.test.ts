import { describe, expect, it } from "vitest";
import { axisTop, type ChartHour, forecastChart, hourLabel, labelStep } from "./chart.ts";

const hours: ChartHour[] = [
  {
    horizon: 1,
    hourStart: "2022-01-19T23:00",
    aqi: 182.5,
    aqiRounded: 182,
    category: "Moderate",
    low: 170.1,
    high: 201.3,
  },
  {
    horizon: 2,
    hourStart: "2022-01-20T00:00",
    aqi: 210.04,
    aqiRounded: 210,
    category: "Poor",
    low: 190,
    high: 260,
  },
];
const latest = {
  hourStart: "2022-01-19T22:00",
  aqi: 175.2,
  aqiRounded: 175,
  category: "Moderate" as const,
};

describe("forecast chart", () => {
  it("one dot per hour, its numbers in data attributes and a title; the newest reading as a square", async () => {
    const svg = String(await forecastChart(hours, latest, "AQI <forecast>"));
    const dots = [...svg.matchAll(/<circle class="point"[^>]*>(.*?)<\/circle>/g)];
    expect(dots).toHaveLength(2);
    expect(dots[1]![0]).toContain(
      'data-horizon="2" data-hour="2022-01-20T00:00" data-aqi="210.04" data-aqi-rounded="210" data-low="190" data-high="260" data-category="Poor"',
    );
    expect(dots[1]![1]).toBe(
      "<title>20 Jan 00:00 (+2 h): AQI 210, Poor; 80% interval 190 to 260</title>",
    );
    expect(svg).toContain('<rect class="latest"');
    expect(svg).toContain('aria-label="AQI &lt;forecast&gt;"');
    // The axis ends at the top of the band holding the highest value (Poor: 300).
    expect(svg).toContain('data-axis-top="300"');
    expect(svg).toContain(">Poor</text>");
    expect(svg).not.toContain(">Very Poor</text>");
  });

  it("axis top, hour labels and their spacing", () => {
    expect(axisTop([12, 40])).toBe(100);
    expect(axisTop([180, 300])).toBe(300);
    expect(axisTop([300.5])).toBe(400);
    expect(axisTop([512.3])).toBe(600);
    expect([1, 8, 9, 24, 48].map(labelStep)).toEqual([1, 1, 2, 3, 6]);
    expect(hourLabel("2022-07-05T09:00")).toBe("5 Jul 09:00");
  });
});
