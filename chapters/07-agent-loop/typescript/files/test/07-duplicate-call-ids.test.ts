// Lab 7.6 重复 call id / duplicate call ids: optional: calls that repeat an id never run.
//
// 这一组的场景在 07-expected.json 里（group "duplicate-call-ids"）：驱动程序在每个场景上运行你的循环，记下轨迹，
// 再与期望的轨迹比较（见 support.ts）。
// This group's scenarios are in 07-expected.json (group "duplicate-call-ids"): the driver runs your loop on each,
// records its trace and compares it with the expected one (see support.ts).
//
// 只运行这一组 / this group alone:
//   npm run build && node --test --test-name-pattern="重复 call id" dist/test/07-*.test.js

import { registerGroup } from "./support.js";

registerGroup("duplicate-call-ids");
