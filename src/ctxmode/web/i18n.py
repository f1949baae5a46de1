"""The viewer in the reader's language: English, or Chinese when the browser asks for ``zh``.

Templates are written in English. When a template is loaded, every text node and every
``title``/``placeholder``/``aria-label`` value that is a key of ``ZH`` is wrapped in a call
of ``tr``, the page's translator, so a template needs no markup for it and an untranslated
phrase simply stays English. Stored text (knowledge, events, file names) is never translated.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import jinja2

#: Simplified Chinese for the viewer's fixed words.
ZH: dict[str, str] = {
    # navigation and page titles
    "Overview": "概览", "Contexts": "知识条目", "Tasks": "任务", "Sessions": "会话",
    "Search": "搜索", "Inbox": "待审知识",
    "Search everything": "搜索全部（知识、任务、会话、文档）",
    "Store:": "存储：", "New context": "新建知识条目", "Error": "错误", "Not found": "未找到",
    "Refused": "已拒绝", "Cannot do that": "无法执行", "Back to the overview": "返回概览",
    "Back to the search": "返回搜索",
    # overview
    "Store": "存储", "Size on disk": "磁盘占用", "Schema version": "数据库结构版本",
    "Linked files": "关联文件", "Last snapshot": "最近快照", "Snapshots built": "已生成快照",
    "Kept out by sandbox": "沙箱挡在上下文外的输出", "none yet": "暂无",
    "No sessions recorded yet.": "尚未记录任何会话。", "Events per day": "每日事件",
    # contexts list and filters
    "full text": "全文", "Type": "类型", "Scope": "范围", "Owner": "作者", "Task": "任务",
    "File": "文件", "Stale": "已过期", "any": "任意", "yes": "是", "no": "否",
    "live only": "仅有效条目", "Filter": "筛选", "Reset": "重置", "Content": "内容",
    "Updated": "更新时间", "Reads": "读取次数", "times read by agents": "被智能体读取的次数",
    "Previous": "上一页", "Next": "下一页", "No contexts match.": "没有符合条件的条目。",
    "All": "全部",
    # context detail and forms
    "Tier": "层级", "Created": "创建时间", "Read by agents": "被智能体读取", "Files": "文件",
    "Team": "团队", "Metadata": "元数据", "History": "历史", "none": "无",
    "local only": "仅本地", "Share with the team": "与团队共享", "Unshare": "取消共享",
    "Edit in place": "直接编辑", "Save": "保存", "Supersede with a new version": "用新版本替代",
    "New content": "新内容", "Files (one per line)": "文件（每行一个）",
    "Write new version": "写入新版本", "Supersede": "替代", "Delete…": "删除…",
    "Metadata (JSON object)": "元数据（JSON 对象）", "Create": "创建", "Cancel": "取消",
    "Session id (for scope session)": "会话 ID（范围为会话时）",
    "Files (one per line, relative to the project root)": "文件（每行一个，相对项目根目录）",
    "Relation to the files": "与文件的关系",
    "Metadata (JSON object, optional)": "元数据（JSON 对象，可选）",
    "or mark as replaced by existing context #": "或标记为被已有条目替代，编号",
    "The text still holds: accept the files as they are now": "内容仍然成立：接受文件的当前内容",
    "Stale:": "已过期：",
    "a linked file's content differs from when it was linked (or the file is gone). Check "
    "that the text above still holds. Reverting the file clears this by itself.": (
        "关联文件的内容与关联时不同（或文件已删除）。请确认上面的内容仍然成立；"
        "把文件改回原样后会自动恢复。"
    ),
    "Nothing was stored; fix it below and create again.": (
        "未保存任何内容；请在下方修改后重新创建。"
    ),
    "Nothing was saved; your text is kept below: fix it and save again.": (
        "未保存；你输入的内容保留在下方：修改后再次保存。"
    ),
    # flags
    "stale": "已过期", "archived": "已归档", "shared": "已共享", "superseded": "已被替代",
    "superseded by": "已被替代：", "next to a match": "相邻内容（不含搜索词）",
    "A linked file's content differs from when it was linked: check that the text still "
    "holds": "关联文件的内容与关联时不同：请确认内容仍然成立",
    "shared with the team through .context/shared": "通过 .context/shared 与团队共享",
    # tasks
    "Set": "设置", "Files:": "文件：", "No tasks yet.": "暂无任务。", "New task": "新建任务",
    "Name": "名称", "Parent": "父任务", "Create task": "创建任务",
    # sessions
    "Resume snapshot": "恢复快照", "Raw XML, as injected": "原始 XML（注入的原文）",
    "data": "数据", "P1 critical": "P1 关键", "P2 important": "P2 重要", "P3 useful": "P3 有用",
    "P4 background": "P4 背景",
    # search
    "words, a phrase, part of a name": "词语、短语或名称的一部分",
    "Shown for context: it holds none of the words searched for": "作为上下文显示：不含任何搜索词",
    # notices
    "Context created.": "已创建条目。", "Context saved.": "已保存条目。",
    "Context superseded.": "已替代条目。", "Context deleted.": "已删除条目。",
    "Task status changed.": "任务状态已更新。", "Task created.": "已创建任务。",
    "The linked files' current content is accepted: not stale.": (
        "已接受关联文件的当前内容：不再过期。"
    ),
}  # fmt: skip

_TEXT = re.compile(r"(>|%\})([^<>{}%]+)(<|\{%)")
_ATTR = re.compile(r'\b(title|placeholder|aria-label)="([^"{}]+)"')


def _wrap(key: str) -> str:
    return "{{ tr(" + repr(key) + ") }}"


def translatable(source: str) -> str:
    """A template's source with its known phrases wrapped in ``tr(...)`` calls."""

    def text(m: re.Match[str]) -> str:
        body = m.group(2)
        key = body.strip()
        if key not in ZH:
            return m.group(0)
        lead = body[: len(body) - len(body.lstrip())]
        trail = body[len(body.rstrip()) :]
        return f"{m.group(1)}{lead}{_wrap(key)}{trail}{m.group(3)}"

    def attr(m: re.Match[str]) -> str:
        key = m.group(2)
        return f'{m.group(1)}="{_wrap(key)}"' if key in ZH else m.group(0)

    return _ATTR.sub(attr, _TEXT.sub(text, source))


class Loader(jinja2.FileSystemLoader):
    """The templates folder, each source made translatable as it is read."""

    def get_source(
        self, environment: jinja2.Environment, template: str
    ) -> tuple[str, str, Callable[[], bool]]:
        source, filename, uptodate = super().get_source(environment, template)
        return translatable(source), filename, uptodate


def language(accept: str) -> str:
    """``zh`` or ``en`` from an Accept-Language header: the preferred supported one."""
    best, best_q = "en", -1.0
    for part in accept.split(","):
        tag, _, params = part.strip().partition(";")
        q = 1.0
        if params.strip().startswith("q="):
            try:
                q = float(params.strip()[2:])
            except ValueError:
                continue
        code = tag.strip().lower().split("-")[0]
        if code in ("zh", "en") and q > best_q:
            best, best_q = code, q
    return best


def translator(lang: str) -> Callable[[str], str]:
    """The ``tr`` of a page: Chinese for ``zh``, else the English key itself."""
    if lang == "zh":
        return lambda key: ZH.get(key, key)
    return lambda key: key


__all__ = ["ZH", "Loader", "language", "translatable", "translator"]
