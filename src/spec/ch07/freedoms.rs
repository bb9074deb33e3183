//! The freedoms of chapter 07: where the chapter leaves a choice, the expected trace holds a node that
//! accepts every choice (docs/JUDGE.md). Each quotes the line of the chapter that grants it; a freedom not
//! on this list does not exist, and the guides list the same ones.

use crate::spec::Freedom;

pub const FREEDOMS: &[Freedom] = &[
    Freedom {
        name: "concurrent-order",
        what: "the order in which the calls of one batch start, report progress and end",
        quote: "两个工具可以并发执行。fast 可以先发出 tool_end，但结果仍要按 assistant 中 slow, fast 的顺序写入消息列表。",
        quote_en: "The two tools may run concurrently. fast may emit tool_end first, but the results are still written to the message list in the assistant's order, slow, fast.",
    },
    Freedom {
        name: "event-delivery",
        what: "when an event reaches the sink: it may be delivered later than the work it reports (queued), always in the loop's order and before the run returns",
        quote: "实际完成先后只决定事件何时出现。",
        quote_en: "Which finishes first only decides when the events appear.",
    },
    Freedom {
        name: "system-prompt-read",
        what: "the system prompt snapshotted at the start or read again for each request",
        quote: "systemPrompt: options.context.systemPrompt, … 运行开始时先克隆 options.context.messages",
        quote_en: "systemPrompt: options.context.systemPrompt, … at the start of the run, first clone options.context.messages",
    },
    Freedom {
        name: "skip-text",
        what: "the text of a skipped result other than length's (any non-empty text, the same wherever it travels)",
        quote: "即使安全规则禁止执行，也要给每个 call 写入一条错误结果。",
        quote_en: "Even when a safety rule forbids running them, write one error result for every call.",
    },
    Freedom {
        name: "failure-text",
        what: "the wording of a failed call's result: it must carry the error's message, and no stack or Debug output",
        quote: "把它转换成同 id/name 的错误 ToolResultMessage。…这里不把 stack 写进结果。",
        quote_en: "Turn it into an error ToolResultMessage with the same id/name. … The stack is not written into the result here.",
    },
    Freedom {
        name: "failure-details",
        what: "the details of a failed call's result",
        quote: "把它转换成同 id/name 的错误 ToolResultMessage。",
        quote_en: "Turn it into an error ToolResultMessage with the same id/name.",
    },
    Freedom {
        name: "duplicate-layer",
        what: "whether a call with its own id beside repeated ones runs or is refused with them",
        quote: "先决定由消息验证层拒绝，还是由 loop 生成错误结果；无论选择哪一层，都要写测试固定责任边界，不要执行两次。",
        quote_en: "First decide whether the message validation layer refuses it or the loop writes error results; whichever layer you choose, pin the boundary of responsibility with a test, and never execute twice.",
    },
    Freedom {
        name: "track-surface",
        what: "what one track's types cannot carry (ToolContext.call_id in TypeScript, the model's signal in Rust)",
        quote: "signal 也要原样交给 executor。",
        quote_en: "The signal, too, is handed to the executor as it is.",
    },
];

#[cfg(test)]
mod tests {
    use super::FREEDOMS;

    #[test]
    fn every_freedom_quotes_the_chapter() {
        // The chapter's text, as the course publishes it; its line breaks and spaces are not words.
        let squeeze = |s: &str| s.split_whitespace().collect::<String>();
        let chapter = squeeze(include_str!(
            "../../../chapters/07-agent-loop/CHAPTER.zh.md"
        ));
        for f in FREEDOMS {
            for part in f.quote.split('…').map(squeeze).filter(|p| !p.is_empty()) {
                assert!(
                    chapter.contains(&part),
                    "{}: {part:?} is not in the chapter",
                    f.name
                );
            }
        }
    }
}
