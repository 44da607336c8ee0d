"""The rules of memory-check, one module each; importing this package registers them all."""

from mainsdk_memory.checks.rules import (
    file_not_checked,
    forget_receipt_discarded,
    key_material_in_source,
    key_store_path_in_source,
    memory_call_outside_tenant,
    memory_open_without_key_store,
    recalled_text_in_system_prompt,
    recalled_text_logged,
    soft_erase_driver_holds_personal_data,
    untrusted_text_remembered_as_trusted,
)

__all__ = [
    "file_not_checked",
    "forget_receipt_discarded",
    "key_material_in_source",
    "key_store_path_in_source",
    "memory_call_outside_tenant",
    "memory_open_without_key_store",
    "recalled_text_in_system_prompt",
    "recalled_text_logged",
    "soft_erase_driver_holds_personal_data",
    "untrusted_text_remembered_as_trusted",
]
