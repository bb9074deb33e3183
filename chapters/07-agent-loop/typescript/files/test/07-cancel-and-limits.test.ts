// Lab 7.5 取消与上限 / cancellation and limits: the signal and maxSteps end a run at its boundaries.
//
// 这一组的场景在 07-expected.json 里（group "cancel-and-limits"）：驱动程序在每个场景上运行你的循环，记下轨迹，
// 再与期望的轨迹比较（见 support.ts）。
// This group's scenarios are in 07-expected.json (group "cancel-and-limits"): the driver runs your loop on each,
// records its trace and compares it with the expected one (see support.ts).
//
// 只运行这一组 / this group alone:
//   npm run build && node --test --test-name-pattern="取消与上限" dist/test/07-*.test.js

import { registerGroup } from "./support.js";

registerGroup("cancel-and-limits");
