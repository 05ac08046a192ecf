// Drawing the person's attention to changes waiting for their decision: the page title counts them
// ("(1) Approval needed — NexusAI") and, where the person allowed notifications, each new one notifies.

const PLAIN_TITLE = document.title || "NexusAI";

export class ApprovalAttention {
  constructor() {
    this.here = new Set(); // tool_call_ids awaiting a decision in this page's runs
    this.elsewhere = 0; // waiting in the person's other runs (GET /api/runs), this page's included
  }

  requested(toolCallId, hostLabel) {
    if (!toolCallId || this.here.has(toolCallId)) return;
    this.here.add(toolCallId);
    this.show();
    notify(toolCallId, hostLabel);
  }

  decided(toolCallId) {
    this.here.delete(toolCallId);
    this.show();
  }

  clear() {
    this.here.clear();
    this.show();
  }

  setElsewhere(count) {
    this.elsewhere = count;
    this.show();
  }

  show() {
    const count = Math.max(this.here.size, this.elsewhere);
    document.title = count ? `(${count}) Approval needed — ${PLAIN_TITLE}` : PLAIN_TITLE;
  }
}

// Ask once, on the person's own gesture (sending a message under "ask before keeping"): browsers refuse
// permission prompts that come from nowhere.
export function offerNotifications() {
  if (!("Notification" in window) || Notification.permission !== "default") return;
  try {
    const asked = Notification.requestPermission();
    if (asked && asked.catch) asked.catch(() => {});
  } catch {
    // an old browser with the callback form only, or one that refuses: the title still shows it
  }
}

function notify(toolCallId, hostLabel) {
  if (!("Notification" in window) || Notification.permission !== "granted") return;
  try {
    const note = new Notification("Approval needed — NexusAI", {
      body: `A change in ${hostLabel || "the model"} is held until you keep or discard it.`,
      tag: "nexus-approval-" + toolCallId,
    });
    note.onclick = () => {
      window.focus();
      note.close();
    };
  } catch {
    // some browsers allow notifications only from a service worker: the title still shows it
  }
}
