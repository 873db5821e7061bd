/**
 * Sample days for the forecast page: the 72 hours of readings before a
 * morning at one of the two stations, cut unchanged from CPCB's hourly
 * exports (the files the models were trained on), one per season. They ship
 * with the Worker as Text modules (wrangler.toml's rule for .csv).
 */
import chandniChowkWinter from "./samples/chandni-chowk-2022-01-19.csv";
import chandniChowkSummer from "./samples/chandni-chowk-2022-05-15.csv";
import lodhiRoadPostMonsoon from "./samples/lodhi-road-2021-11-27.csv";
import lodhiRoadMonsoon from "./samples/lodhi-road-2022-07-21.csv";

export interface SampleDay {
  /** URL-safe name, also the file name under /samples/. */
  readonly id: string;
  readonly label: string;
  /** The station's name as the model knows it. */
  readonly station: string;
  readonly csv: string;
  /**
   * Lodhi Road's export has no air temperature (its AT column is empty), so
   * its samples carry Chandni Chowk's reading of the same hour, 7 km away:
   * the value training borrowed for that station too.
   */
  readonly borrowedTemperature?: { readonly value: number; readonly from: string };
}

export const SAMPLE_DAYS: readonly SampleDay[] = [
  {
    id: "chandni-chowk-2022-01-19",
    label: "Chandni Chowk, 19 Jan 2022, from 08:00 (winter smog)",
    station: "Chandni Chowk, Delhi",
    csv: chandniChowkWinter,
  },
  {
    id: "chandni-chowk-2022-05-15",
    label: "Chandni Chowk, 15 May 2022, from 08:00 (summer dust)",
    station: "Chandni Chowk, Delhi",
    csv: chandniChowkSummer,
  },
  {
    id: "lodhi-road-2022-07-21",
    label: "Lodhi Road, 21 Jul 2022, from 08:00 (monsoon)",
    station: "Lodhi Road, Delhi",
    csv: lodhiRoadMonsoon,
    borrowedTemperature: { value: 32.51, from: "Chandni Chowk, 2022-07-21 07:00" },
  },
  {
    id: "lodhi-road-2021-11-27",
    label: "Lodhi Road, 27 Nov 2021, from 08:00 (post-monsoon)",
    station: "Lodhi Road, Delhi",
    csv: lodhiRoadPostMonsoon,
    borrowedTemperature: { value: 19.63, from: "Chandni Chowk, 2021-11-27 07:00" },
  },
];

export function sampleDay(id: string): SampleDay | undefined {
  return SAMPLE_DAYS.find((sample) => sample.id === id);
}
