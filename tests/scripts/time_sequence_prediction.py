# ruff: noqa: B007, B023, E402, F841, N801, N802, N803, N806, UP008, UP010, UP031, UP032
# (tutorial code as is)
"""pytorch/examples time_sequence_prediction: two LSTMCells in double precision learn sine waves
with optim.LBFGS and a closure, then predict the future.

generate_sine_wave.py and train.py in one file, with fewer and shorter waves and no plots.
"""
from __future__ import print_function

import os
import tempfile

import numpy as np

import jitgrad as torch
import jitgrad.nn as nn
import jitgrad.optim as optim

# ---- generate_sine_wave.py ----
np.random.seed(2)

T = 20
L = 48
N = 8
x = np.empty((N, L), 'int64')
x[:] = np.array(range(L)) + np.random.randint(-4 * T, 4 * T, N).reshape(N, 1)
data = np.sin(x / 1.0 / T).astype('float64')
tmpdir = tempfile.mkdtemp()
torch.save(data, open(os.path.join(tmpdir, 'traindata.pt'), 'wb'))


# ---- train.py ----
class Sequence(nn.Module):
    def __init__(self):
        super(Sequence, self).__init__()
        self.lstm1 = nn.LSTMCell(1, 51)
        self.lstm2 = nn.LSTMCell(51, 51)
        self.linear = nn.Linear(51, 1)

    def forward(self, input, future=0):
        outputs = []
        h_t = torch.zeros(input.size(0), 51, dtype=torch.double)
        c_t = torch.zeros(input.size(0), 51, dtype=torch.double)
        h_t2 = torch.zeros(input.size(0), 51, dtype=torch.double)
        c_t2 = torch.zeros(input.size(0), 51, dtype=torch.double)

        for input_t in input.split(1, dim=1):
            h_t, c_t = self.lstm1(input_t, (h_t, c_t))
            h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
            output = self.linear(h_t2)
            outputs += [output]
        for i in range(future):  # if we should predict the future
            h_t, c_t = self.lstm1(output, (h_t, c_t))
            h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
            output = self.linear(h_t2)
            outputs += [output]
        outputs = torch.cat(outputs, dim=1)
        return outputs


class Opt:
    steps = 4


if __name__ == '__main__':
    opt = Opt()
    # set random seed to 0
    np.random.seed(0)
    torch.manual_seed(0)
    # load data and make training set
    data = torch.load(os.path.join(tmpdir, 'traindata.pt'), weights_only=False)
    input = torch.from_numpy(data[3:, :-1])
    target = torch.from_numpy(data[3:, 1:])
    test_input = torch.from_numpy(data[:3, :-1])
    test_target = torch.from_numpy(data[:3, 1:])
    # build the model
    seq = Sequence()
    seq.double()
    criterion = nn.MSELoss()
    # use LBFGS as optimizer since we can load the whole data to train
    optimizer = optim.LBFGS(seq.parameters(), lr=0.8, max_iter=8)
    step_losses, test_losses, closure_calls = [], [], []
    # begin to train
    for i in range(opt.steps):
        print('STEP: ', i)
        calls = []

        def closure():
            optimizer.zero_grad()
            out = seq(input)
            loss = criterion(out, target)
            print('loss:', loss.item())
            calls.append(loss.item())
            loss.backward()
            return loss
        step_loss = optimizer.step(closure)
        step_losses.append(step_loss.item())
        closure_calls.append(len(calls))
        # begin to predict, no need to track gradient here
        with torch.no_grad():
            future = 20
            pred = seq(test_input, future=future)
            loss = criterion(pred[:, :-future], test_target)
            print('test loss:', loss.item())
            test_losses.append(loss.item())
            y = pred.detach().numpy()
    # (the plots of y are left out)
    prediction_shape = y.shape
    prediction_dtype = y.dtype
    lbfgs_state = optimizer.state_dict()

    # a deterministic part to compare with torch: one LBFGS step from fixed weights
    fixed = Sequence().double()
    with torch.no_grad():
        for k, p in enumerate(fixed.parameters()):
            p.copy_(torch.sin(torch.arange(p.numel(), dtype=torch.double) * 0.3 + k)
                    .view_as(p) * 0.2)
    fixed_before = fixed(test_input, future=3).tolist()
    fixed_opt = optim.LBFGS(fixed.parameters(), lr=0.8, max_iter=3, history_size=2)

    def fixed_closure():
        fixed_opt.zero_grad()
        loss = criterion(fixed(input[:, :10]), target[:, :10])
        loss.backward()
        return loss
    fixed_first_loss = fixed_opt.step(fixed_closure).item()
    fixed_after = fixed(test_input[:, :10], future=3).tolist()
    fixed_state = fixed_opt.state_dict()['state'][0]
    fixed_counts = (fixed_state['func_evals'], fixed_state['n_iter'])

    # the same from the same weights with the strong Wolfe line search
    wolfe = Sequence().double()
    wolfe.load_state_dict(fixed.state_dict())
    wolfe_opt = optim.LBFGS(wolfe.parameters(), lr=1, max_iter=4, history_size=3,
                            line_search_fn="strong_wolfe")

    def wolfe_closure():
        wolfe_opt.zero_grad()
        loss = criterion(wolfe(input[:, :10]), target[:, :10])
        loss.backward()
        return loss
    wolfe_losses = [wolfe_opt.step(wolfe_closure).item() for _ in range(2)]
    wolfe_losses.append(wolfe_closure().item())
    wolfe_state = wolfe_opt.state_dict()['state'][0]
    wolfe_counts = (wolfe_state['func_evals'], wolfe_state['n_iter'])
    wolfe_after = wolfe(test_input[:, :10], future=3).tolist()
