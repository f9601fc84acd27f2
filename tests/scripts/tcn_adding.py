# ruff: noqa: B007, E402, E501, F401, F841, N801, N802, N803, N806, UP008, UP031, UP032 (locuslab's code as is)
"""locuslab/TCN: TCN/tcn.py (Chomp1d, TemporalBlock of two dilated causal
torch.nn.utils.weight_norm(nn.Conv1d(..., dilation=...)) with Chomp1d, ReLU and Dropout, a 1x1
downsample on the residual, init_weights's .data.normal_(0, 0.01), TemporalConvNet),
TCN/adding_problem/model.py (the TCN with a Linear head on the last step), utils.py
(data_generator of the adding problem: torch.rand, a two-hot mask drawn by np.random.choice,
torch.cat, Variable) and add_test.py (the optimizer by getattr(optim, args.optim), train with
F.mse_loss, clip_grad_norm_, evaluate under torch.no_grad).

Changes: the files are one script (tcn.py, model.py, utils.py, add_test.py); the command line
is parsed from a list: --cuda (add_test.py's flag is store_false, so passing it turns CUDA
off), a shorter problem and a smaller network (sequences of 20, not 400; kernel 3, 3 levels of
16 channels, not 7, 8 and 30; so the receptive field, 29, still covers the sequence), gradient
clipping at 1 (not off), 4 epochs (not 10), logging every 20 batches (not 100); 2000 training
and 200 test sequences (not 50000 and 1000); np.random.seed for repeatable data. Sections
marked "(added)" are not locuslab's: they record the losses and fixed-weight results to compare
with torch (weight_g, weight_v and their gradients).
"""
import argparse
import sys

import numpy as np
import jitgrad as torch
import jitgrad.nn as nn
import jitgrad.nn.functional as F
import jitgrad.optim as optim
from jitgrad.autograd import Variable
from jitgrad.nn.utils import weight_norm


# ---------------------------------------------------------------- TCN/tcn.py


class Chomp1d(nn.Module):
    def __init__(self, chomp_size):
        super(Chomp1d, self).__init__()
        self.chomp_size = chomp_size

    def forward(self, x):
        return x[:, :, :-self.chomp_size].contiguous()


class TemporalBlock(nn.Module):
    def __init__(self, n_inputs, n_outputs, kernel_size, stride, dilation, padding, dropout=0.2):
        super(TemporalBlock, self).__init__()
        self.conv1 = weight_norm(nn.Conv1d(n_inputs, n_outputs, kernel_size,
                                           stride=stride, padding=padding, dilation=dilation))
        self.chomp1 = Chomp1d(padding)
        self.relu1 = nn.ReLU()
        self.dropout1 = nn.Dropout(dropout)

        self.conv2 = weight_norm(nn.Conv1d(n_outputs, n_outputs, kernel_size,
                                           stride=stride, padding=padding, dilation=dilation))
        self.chomp2 = Chomp1d(padding)
        self.relu2 = nn.ReLU()
        self.dropout2 = nn.Dropout(dropout)

        self.net = nn.Sequential(self.conv1, self.chomp1, self.relu1, self.dropout1,
                                 self.conv2, self.chomp2, self.relu2, self.dropout2)
        self.downsample = nn.Conv1d(n_inputs, n_outputs, 1) if n_inputs != n_outputs else None
        self.relu = nn.ReLU()
        self.init_weights()

    def init_weights(self):
        self.conv1.weight.data.normal_(0, 0.01)
        self.conv2.weight.data.normal_(0, 0.01)
        if self.downsample is not None:
            self.downsample.weight.data.normal_(0, 0.01)

    def forward(self, x):
        out = self.net(x)
        res = x if self.downsample is None else self.downsample(x)
        return self.relu(out + res)


class TemporalConvNet(nn.Module):
    def __init__(self, num_inputs, num_channels, kernel_size=2, dropout=0.2):
        super(TemporalConvNet, self).__init__()
        layers = []
        num_levels = len(num_channels)
        for i in range(num_levels):
            dilation_size = 2 ** i
            in_channels = num_inputs if i == 0 else num_channels[i-1]
            out_channels = num_channels[i]
            layers += [TemporalBlock(in_channels, out_channels, kernel_size, stride=1, dilation=dilation_size,
                                     padding=(kernel_size-1) * dilation_size, dropout=dropout)]

        self.network = nn.Sequential(*layers)

    def forward(self, x):
        return self.network(x)


# ---------------------------------------------------------------- TCN/adding_problem/model.py


class TCN(nn.Module):
    def __init__(self, input_size, output_size, num_channels, kernel_size, dropout):
        super(TCN, self).__init__()
        self.tcn = TemporalConvNet(input_size, num_channels, kernel_size=kernel_size, dropout=dropout)
        self.linear = nn.Linear(num_channels[-1], output_size)
        self.init_weights()

    def init_weights(self):
        self.linear.weight.data.normal_(0, 0.01)

    def forward(self, x):
        y1 = self.tcn(x)
        return self.linear(y1[:, :, -1])


# ---------------------------------------------------------------- TCN/adding_problem/utils.py


def data_generator(N, seq_length):
    """
    Args:
        seq_length: Length of the adding problem data
        N: # of data in the set
    """
    X_num = torch.rand([N, 1, seq_length])
    X_mask = torch.zeros([N, 1, seq_length])
    Y = torch.zeros([N, 1])
    for i in range(N):
        positions = np.random.choice(seq_length, size=2, replace=False)
        X_mask[i, 0, positions[0]] = 1
        X_mask[i, 0, positions[1]] = 1
        Y[i,0] = X_num[i, 0, positions[0]] + X_num[i, 0, positions[1]]
    X = torch.cat((X_num, X_mask), dim=1)
    return Variable(X), Variable(Y)


# ---------------------------------------------------------------- (added) fixed weights
# A fixed-weight TCN (two levels, kernel 3: a downsample on the first block's residual), its
# weight_g / weight_v set by NumPy (jitgrad's random numbers are not torch's): the forward on a
# fixed adding-problem batch, the MSE loss, the gradients of every parameter (weight_g and
# weight_v among them), the clipped norm and two Adam steps; what init_weights's
# .data.normal_ on the hook's weight leaves after the next forward.
_rng = np.random.default_rng(0)
fixed = TCN(2, 1, [6, 6], kernel_size=3, dropout=0.0)
fixed_results = {}
fixed_results['init_weight_std'] = fixed.tcn.network[0].conv1.weight.std().item()  # (normal_(0, 0.01))
with torch.no_grad():
    for _name, _p in fixed.named_parameters():
        _p.copy_(torch.tensor(_rng.normal(0.0, 0.5, tuple(_p.shape)), dtype=torch.float32))
fixed_results['names'] = [n for n, _ in fixed.named_parameters()]
fixed_results['state_dict'] = list(fixed.state_dict())
_X_num = _rng.uniform(0, 1, (4, 1, 12))
_X_mask = np.zeros((4, 1, 12))
for _i in range(4):
    _X_mask[_i, 0, _rng.choice(12, size=2, replace=False)] = 1
fixed_x = torch.tensor(np.concatenate([_X_num, _X_mask], axis=1), dtype=torch.float32)
fixed_y = torch.tensor((_X_num * _X_mask).sum(axis=(1, 2))[:, None], dtype=torch.float32)
_optim_name = 'Adam'  # (add_test.py's --optim)
_optimizer = getattr(optim, _optim_name)(fixed.parameters(), lr=4e-3)
fixed_results['losses'], fixed_results['norms'] = [], []
for _step in range(2):
    _optimizer.zero_grad()
    _output = fixed(fixed_x)
    _loss = F.mse_loss(_output, fixed_y)
    _loss.backward()
    if _step == 0:
        _block = fixed.tcn.network[0]
        fixed_results['output'] = _output.detach().clone()
        fixed_results['weight'] = _block.conv1.weight.detach().clone()  # (g * v / ||v||)
        fixed_results['weight_from_g_v'] = (_block.conv1.weight_g * _block.conv1.weight_v / _block.conv1.weight_v.norm(dim=(1, 2), keepdim=True)).detach()
        fixed_results['grads'] = {n: p.grad.clone() for n, p in fixed.named_parameters()}
    fixed_results['norms'].append(torch.nn.utils.clip_grad_norm_(fixed.parameters(), 1.0).item())
    _optimizer.step()
    fixed_results['losses'].append(_loss.item())
fixed_results['params'] = {n: p.detach().clone() for n, p in fixed.named_parameters()}
fixed_results['weight_requires_grad'] = fixed.tcn.network[0].conv1.weight.requires_grad
fixed.eval()
with torch.no_grad():
    fixed_results['eval_output'] = fixed(fixed_x)

# ---------------------------------------------------------------- TCN/adding_problem/add_test.py
# sys.path.append("../../")
# from TCN.adding_problem.model import TCN
# from TCN.adding_problem.utils import data_generator

parser = argparse.ArgumentParser(description='Sequence Modeling - The Adding Problem')
parser.add_argument('--batch_size', type=int, default=32, metavar='N',
                    help='batch size (default: 32)')
parser.add_argument('--cuda', action='store_false',
                    help='use CUDA (default: True)')
parser.add_argument('--dropout', type=float, default=0.0,
                    help='dropout applied to layers (default: 0.0)')
parser.add_argument('--clip', type=float, default=-1,
                    help='gradient clip, -1 means no clip (default: -1)')
parser.add_argument('--epochs', type=int, default=10,
                    help='upper epoch limit (default: 10)')
parser.add_argument('--ksize', type=int, default=7,
                    help='kernel size (default: 7)')
parser.add_argument('--levels', type=int, default=8,
                    help='# of levels (default: 8)')
parser.add_argument('--seq_len', type=int, default=400,
                    help='sequence length (default: 400)')
parser.add_argument('--log-interval', type=int, default=100, metavar='N',
                    help='report interval (default: 100')
parser.add_argument('--lr', type=float, default=4e-3,
                    help='initial learning rate (default: 4e-3)')
parser.add_argument('--optim', type=str, default='Adam',
                    help='optimizer to use (default: Adam)')
parser.add_argument('--nhid', type=int, default=30,
                    help='number of hidden units per layer (default: 30)')
parser.add_argument('--seed', type=int, default=1111,
                    help='random seed (default: 1111)')
args = parser.parse_args(['--cuda', '--seq_len', '20', '--ksize', '3', '--levels', '3', '--nhid', '16',
                          '--clip', '1', '--epochs', '4', '--log-interval', '20'])  # (parse_args())

torch.manual_seed(args.seed)
np.random.seed(args.seed)  # (added)
if torch.cuda.is_available():
    if not args.cuda:
        print("WARNING: You have a CUDA device, so you should probably run with --cuda")

input_channels = 2
n_classes = 1
batch_size = args.batch_size
seq_length = args.seq_len
epochs = args.epochs

print(args)
print("Producing data...")
X_train, Y_train = data_generator(2000, seq_length)  # (50000)
X_test, Y_test = data_generator(200, seq_length)  # (1000)


# Note: We use a very simple setting here (assuming all levels have the same # of channels.
channel_sizes = [args.nhid]*args.levels
kernel_size = args.ksize
dropout = args.dropout
model = TCN(input_channels, n_classes, channel_sizes, kernel_size=kernel_size, dropout=dropout)

if args.cuda:
    model.cuda()
    X_train = X_train.cuda()
    Y_train = Y_train.cuda()
    X_test = X_test.cuda()
    Y_test = Y_test.cuda()

lr = args.lr
optimizer = getattr(optim, args.optim)(model.parameters(), lr=lr)

losses, test_losses, logged = [], [], []  # (added)


def train(epoch):
    global lr
    model.train()
    batch_idx = 1
    total_loss = 0
    for i in range(0, X_train.size(0), batch_size):
        if i + batch_size > X_train.size(0):
            x, y = X_train[i:], Y_train[i:]
        else:
            x, y = X_train[i:(i+batch_size)], Y_train[i:(i+batch_size)]
        optimizer.zero_grad()
        output = model(x)
        loss = F.mse_loss(output, y)
        loss.backward()
        if args.clip > 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
        optimizer.step()
        batch_idx += 1
        total_loss += loss.item()
        losses.append(loss.item())  # (added)

        if batch_idx % args.log_interval == 0:
            cur_loss = total_loss / args.log_interval
            processed = min(i+batch_size, X_train.size(0))
            logged.append((epoch, processed, cur_loss))  # (added)
            print('Train Epoch: {:2d} [{:6d}/{:6d} ({:.0f}%)]\tLearning rate: {:.4f}\tLoss: {:.6f}'.format(
                epoch, processed, X_train.size(0), 100.*processed/X_train.size(0), lr, cur_loss))
            total_loss = 0


def evaluate():
    model.eval()
    with torch.no_grad():
        output = model(X_test)
        test_loss = F.mse_loss(output, Y_test)
        print('\nTest set: Average loss: {:.6f}\n'.format(test_loss.item()))
        return test_loss.item()


for ep in range(1, epochs+1):
    train(ep)
    tloss = evaluate()
    test_losses.append(tloss)  # (added)
