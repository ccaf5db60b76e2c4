"""Recording fakes of the radio chips behind the HAL interface of tssbfw.hal.

Each fake logs every SPI transaction and answers reads from a small register model, so
the driver tests can compare command sequences with the datasheets.
"""


class _Base:
    def __init__(self) -> None:
        self.log = []  # bytes clocked out, one entry per NSS-framed transaction
        self.reset_levels = []
        self.wakes = 0  # NSS pulses without a transaction (SX126x wake-up)
        self.t = 0
        self._selected = False
        self._moved = False

    def select(self, on: bool) -> None:
        if on:
            self._moved = False
        elif self._selected and not self._moved:
            self.wakes += 1
        self._selected = on

    def transfer(self, out: bytes) -> bytes:
        assert self._selected, "SPI transfer with NSS high"
        self._moved = True
        self.log.append(bytes(out))
        return self.answer(bytes(out))

    def set_reset(self, level: int) -> None:
        self.reset_levels.append(level)

    def sleep_ms(self, ms: int) -> None:
        self.t += ms if ms > 0 else 1

    def ticks_ms(self) -> int:
        return self.t

    def elapsed_ms(self, start: int) -> int:
        return self.t - start


class FakeSX1262(_Base):
    def __init__(self) -> None:
        super().__init__()
        self.regs = {0x0740: 0x14, 0x0741: 0x24, 0x0736: 0x09, 0x0889: 0x00}
        self.busy_forever = False
        self.irq_flags = 0
        self.rx = b""
        self.rx_start = 0x80
        self.rssi_raw = 0
        self.snr_raw = 0
        self.buffer = b""

    def busy(self) -> bool:
        return self.busy_forever

    def irq(self) -> bool:
        return self.irq_flags != 0

    def answer(self, out: bytes) -> bytes:
        op = out[0]
        resp = bytearray(len(out))
        if op == 0x1D:
            addr = (out[1] << 8) | out[2]
            for i in range(len(out) - 4):
                resp[4 + i] = self.regs.get(addr + i, 0)
        elif op == 0x0D:
            addr = (out[1] << 8) | out[2]
            for i in range(len(out) - 3):
                self.regs[addr + i] = out[3 + i]
        elif op == 0x12:
            resp[2] = self.irq_flags >> 8
            resp[3] = self.irq_flags & 0xFF
        elif op == 0x02:
            self.irq_flags &= ~((out[1] << 8) | out[2])
        elif op == 0x13:
            resp[2] = len(self.rx)
            resp[3] = self.rx_start
        elif op == 0x1E:
            assert out[1] == self.rx_start
            resp[3:] = self.rx
        elif op == 0x14:
            resp[2] = self.rssi_raw
            resp[3] = self.snr_raw & 0xFF
        elif op == 0x0E:
            self.buffer = out[2:]
        return bytes(resp)

    def opcodes(self) -> list:
        return [entry[0] for entry in self.log]


class FakeSX1276(_Base):
    def __init__(self) -> None:
        super().__init__()
        self.regs = bytearray(0x80)
        self.regs[0x42] = 0x12  # RegVersion
        self.regs[0x31] = 0xC3  # RegDetectOptimize reset value
        self.fifo = bytearray(256)
        self.writes = []  # (register, bytes written)
        self.dio0 = False

    def busy(self) -> bool:
        return False

    def irq(self) -> bool:
        return self.dio0

    def answer(self, out: bytes) -> bytes:
        addr = out[0] & 0x7F
        data = out[1:]
        resp = bytearray(len(out))
        if out[0] & 0x80:
            self.writes.append((addr, bytes(data)))
            for i in range(len(data)):
                if addr == 0x00:
                    ptr = self.regs[0x0D]
                    self.fifo[ptr] = data[i]
                    self.regs[0x0D] = (ptr + 1) & 0xFF
                elif addr == 0x12:
                    self.regs[0x12] &= ~data[i] & 0xFF  # write 1 to clear
                else:
                    self.regs[addr + i] = data[i]
        else:
            for i in range(len(data)):
                if addr == 0x00:
                    ptr = self.regs[0x0D]
                    resp[1 + i] = self.fifo[ptr]
                    self.regs[0x0D] = (ptr + 1) & 0xFF
                else:
                    resp[1 + i] = self.regs[addr + i]
        return bytes(resp)
